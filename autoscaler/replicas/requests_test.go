package replicas

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func cpu(milli int64) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(milli, resource.DecimalSI)}
}

// Cases from upstream TestCalculateRequests and
// TestCalculatePodRequestsFromContainers_NonExistentContainer (with
// PodLevelResources on, its v1.37 default), plus the sidecar-aware init
// container peak and overhead of the pod-level path.
func TestRequests(t *testing.T) {
	two := []Container{{Name: "container1", Requests: cpu(100)}, {Name: "container2", Requests: cpu(50)}}
	cases := []struct {
		name      string
		pods      []Pod
		container string
		resource  corev1.ResourceName
		want      map[string]int64
		wantErr   string
	}{
		{name: "void", resource: corev1.ResourceCPU, want: map[string]int64{}},
		{name: "sum container requests", resource: corev1.ResourceCPU,
			pods: []Pod{{Name: "p", Containers: two}}, want: map[string]int64{"p": 150}},
		{name: "pod-level requests override container requests", resource: corev1.ResourceCPU,
			pods: []Pod{{Name: "p", Containers: two, PodRequests: cpu(800)}}, want: map[string]int64{"p": 800}},
		{name: "missing container request fails", resource: corev1.ResourceCPU,
			pods:    []Pod{{Name: "p", Containers: []Container{{Name: "container1"}, two[1]}}},
			wantErr: "missing request for cpu in container container1 of Pod p"},
		{name: "pod-level requests cover missing container requests", resource: corev1.ResourceCPU,
			pods: []Pod{{Name: "p", Containers: []Container{{Name: "container1"}, two[1]}, PodRequests: cpu(800)}},
			want: map[string]int64{"p": 800}},
		{name: "named container", resource: corev1.ResourceCPU, container: "container1",
			pods: []Pod{{Name: "p", Containers: two}}, want: map[string]int64{"p": 100}},
		{name: "named container ignores pod-level requests", resource: corev1.ResourceCPU, container: "container1",
			pods: []Pod{{Name: "p", Containers: two, PodRequests: cpu(800)}}, want: map[string]int64{"p": 100}},
		{name: "restartable init containers are summed, others are not", resource: corev1.ResourceCPU,
			pods: []Pod{{Name: "p", Containers: two[:1], InitContainers: []Container{
				{Name: "init-container1", Requests: cpu(20)},
				{Name: "restartable-container1", Requests: cpu(50), RestartAlways: true},
			}}},
			want: map[string]int64{"p": 150}},
		{name: "named restartable init container", resource: corev1.ResourceCPU, container: "sidecar",
			pods: []Pod{{Name: "p", Containers: two, InitContainers: []Container{{Name: "sidecar", Requests: cpu(7), RestartAlways: true}}}},
			want: map[string]int64{"p": 7}},
		{name: "non-existent container", resource: corev1.ResourceCPU, container: "non-existent-container",
			pods:    []Pod{{Name: "test-pod", Containers: two}},
			wantErr: "container non-existent-container not found in Pod test-pod"},
		{name: "pod-level path adds overhead", resource: corev1.ResourceCPU,
			pods: []Pod{{Name: "p", Containers: two, PodRequests: cpu(800), Overhead: cpu(30)}}, want: map[string]int64{"p": 830}},
		{name: "container path ignores overhead", resource: corev1.ResourceCPU,
			pods: []Pod{{Name: "p", Containers: two, Overhead: cpu(30)}}, want: map[string]int64{"p": 150}},
		{name: "pod-level memory only: cpu aggregated from containers with init peak", resource: corev1.ResourceCPU,
			pods: []Pod{{Name: "p", Containers: two[:1],
				PodRequests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
				InitContainers: []Container{
					{Name: "sidecar", Requests: cpu(50), RestartAlways: true},
					{Name: "big-init", Requests: cpu(500)},
				}}},
			// regular 100 + sidecar 50 = 150; init peak = 500 + 50 = 550.
			want: map[string]int64{"p": 550}},
		{name: "pod-level path without the resource anywhere fails", resource: corev1.ResourceCPU,
			pods:    []Pod{{Name: "p", Containers: []Container{{Name: "c"}}, PodRequests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}},
			wantErr: "missing pod-level request for cpu in Pod p"},
		{name: "unsupported pod-level resource does not switch paths", resource: corev1.ResourceCPU,
			pods: []Pod{{Name: "p", Containers: two, PodRequests: corev1.ResourceList{"example.com/gpu": resource.MustParse("1")}}},
			want: map[string]int64{"p": 150}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Requests(tc.pods, tc.resource, tc.container)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
