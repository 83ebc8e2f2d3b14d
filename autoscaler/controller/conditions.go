package controller

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// setCondition sets c in status, as upstream: the condition is appended when
// absent, its transition time moves only when the status changes, and
// reason and message are overwritten.
func setCondition(status *autoscalingv2.HorizontalPodAutoscalerStatus, c autoscalingv2.HorizontalPodAutoscalerCondition, now metav1.Time) {
	for i := range status.Conditions {
		existing := &status.Conditions[i]
		if existing.Type != c.Type {
			continue
		}
		if existing.Status != c.Status {
			existing.LastTransitionTime = now
		}
		existing.Status, existing.Reason, existing.Message = c.Status, c.Reason, c.Message
		return
	}
	c.LastTransitionTime = now
	status.Conditions = append(status.Conditions, c)
}

func condition(t autoscalingv2.HorizontalPodAutoscalerConditionType, s corev1.ConditionStatus, reason, message string) autoscalingv2.HorizontalPodAutoscalerCondition {
	return autoscalingv2.HorizontalPodAutoscalerCondition{Type: t, Status: s, Reason: reason, Message: message}
}

// conditionTrue reports whether status holds condition t with status True.
func conditionTrue(status autoscalingv2.HorizontalPodAutoscalerStatus, t autoscalingv2.HorizontalPodAutoscalerConditionType) bool {
	for _, c := range status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
