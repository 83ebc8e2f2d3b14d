package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The real node's cluster DNS (Options.ClusterDNS): the one part of a
// cluster's DNS that pods of Kubernetes' own e2e tests need — the A record
// of a Service's ClusterIP, <service>.<namespace>.svc.cluster.local (e.g.
// agnhost's resource-consumer-controller reaches its consumers that way). It
// runs in the process that started the cluster, on UDP port 53 of the pod
// network's gateway, and the kubelet names it as clusterDNS, so pods with
// dnsPolicy ClusterFirst get it (and the search path
// <namespace>.svc.cluster.local svc.cluster.local cluster.local) in their
// resolv.conf. It answers from kube-apiserver, never forwards: a name outside
// cluster.local is NXDOMAIN, so no pod's query ever leaves the machine.

const (
	clusterDomain = "cluster.local"
	dnsTTL        = 5 // seconds; Services of the tests come and go
)

// clusterDNS serves the cluster's DNS on one UDP socket.
type clusterDNS struct {
	conn   net.PacketConn
	client kubernetes.Interface
	done   sync.WaitGroup
}

// startClusterDNS listens on addr (host:port, UDP) and answers until stop.
func startClusterDNS(addr string, client kubernetes.Interface) (*clusterDNS, error) {
	conn, err := net.ListenPacket("udp4", addr)
	if err != nil {
		return nil, fmt.Errorf("cluster DNS: %w", err)
	}
	d := &clusterDNS{conn: conn, client: client}
	d.done.Add(1)
	go d.serve()
	return d, nil
}

func (d *clusterDNS) stop() {
	_ = d.conn.Close()
	d.done.Wait()
}

func (d *clusterDNS) serve() {
	defer d.done.Done()
	buf := make([]byte, 1500)
	for {
		n, from, err := d.conn.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		req := append([]byte(nil), buf[:n]...)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if resp, err := d.answer(ctx, req); err == nil {
				_, _ = d.conn.WriteTo(resp, from)
			}
		}()
	}
}

// answer builds the response to one query message.
func (d *clusterDNS) answer(ctx context.Context, req []byte) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(req)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired}
	ip, rcode := d.resolve(ctx, q)
	rh.RCode = rcode
	b := dnsmessage.NewBuilder(make([]byte, 0, 512), rh)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if ip != nil {
		if err := b.StartAnswers(); err != nil {
			return nil, err
		}
		var a dnsmessage.AResource
		copy(a.A[:], ip.To4())
		if err := b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: dnsTTL}, a); err != nil {
			return nil, err
		}
	}
	return b.Finish()
}

// resolve returns the IPv4 address of q (nil with RCodeSuccess: the name
// exists, but not with a record of that type).
func (d *clusterDNS) resolve(ctx context.Context, q dnsmessage.Question) (net.IP, dnsmessage.RCode) {
	name := strings.ToLower(strings.TrimSuffix(q.Name.String(), "."))
	rest, ok := strings.CutSuffix(name, ".svc."+clusterDomain)
	if !ok || q.Class != dnsmessage.ClassINET {
		return nil, dnsmessage.RCodeNameError
	}
	svcName, ns, ok := strings.Cut(rest, ".")
	if !ok || svcName == "" || ns == "" || strings.Contains(ns, ".") {
		return nil, dnsmessage.RCodeNameError
	}
	svc, err := d.client.CoreV1().Services(ns).Get(ctx, svcName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, dnsmessage.RCodeNameError
	}
	if err != nil {
		return nil, dnsmessage.RCodeServerFailure
	}
	ip := net.ParseIP(svc.Spec.ClusterIP).To4()
	if ip == nil || q.Type != dnsmessage.TypeA {
		return nil, dnsmessage.RCodeSuccess
	}
	return ip, dnsmessage.RCodeSuccess
}
