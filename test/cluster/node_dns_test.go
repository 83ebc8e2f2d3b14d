package cluster

import (
	"context"
	"net"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestClusterDNS asks the cluster DNS over UDP on loopback, as a pod's
// resolver does: a Service's A record, NODATA for its AAAA and for a headless
// Service, NXDOMAIN for a missing Service and for any name outside
// svc.cluster.local (nothing is forwarded).
func TestClusterDNS(t *testing.T) {
	client := fake.NewSimpleClientset(
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.3.4"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop"}, Spec: corev1.ServiceSpec{ClusterIP: "None"}},
	)
	d, err := startClusterDNS("127.0.0.1:0", client)
	if err != nil {
		t.Fatal(err)
	}
	defer d.stop()
	addr := d.conn.LocalAddr().String()
	for _, tc := range []struct {
		name  string
		qtype dnsmessage.Type
		rcode dnsmessage.RCode
		a     string
	}{
		{"web.shop.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, "10.96.3.4"},
		{"WEB.shop.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, "10.96.3.4"},
		{"web.shop.svc.cluster.local.", dnsmessage.TypeAAAA, dnsmessage.RCodeSuccess, ""},
		{"db.shop.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, ""},
		{"api.shop.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeNameError, ""},
		{"web.shop.svc.cluster.local.shop.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeNameError, ""},
		{"example.com.", dnsmessage.TypeA, dnsmessage.RCodeNameError, ""},
	} {
		rcode, a := query(t, addr, tc.name, tc.qtype)
		if rcode != tc.rcode || a != tc.a {
			t.Errorf("%s %v: got %v %q, want %v %q", tc.name, tc.qtype, rcode, a, tc.rcode, tc.a)
		}
	}
}

func query(t *testing.T, addr, name string, qtype dnsmessage.Type) (dnsmessage.RCode, string) {
	t.Helper()
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 7, RecursionDesired: true})
	_ = b.StartQuestions()
	_ = b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: qtype, Class: dnsmessage.ClassINET})
	msg, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write(msg); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1500)
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	var p dnsmessage.Parser
	h, err := p.Start(buf[:n])
	if err != nil {
		t.Fatal(err)
	}
	if h.ID != 7 || !h.Response {
		t.Fatalf("header %+v", h)
	}
	_ = p.SkipAllQuestions()
	var a string
	for {
		rh, err := p.AnswerHeader()
		if err != nil {
			break
		}
		if rh.Type == dnsmessage.TypeA {
			r, err := p.AResource()
			if err != nil {
				t.Fatal(err)
			}
			a = net.IP(r.A[:]).String()
		} else {
			_ = p.SkipAnswer()
		}
	}
	return h.RCode, a
}
