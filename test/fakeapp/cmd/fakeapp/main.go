// Command fakeapp runs test/fakeapp against any cluster: it serves the
// simulated request counters and queue gauge on a loopback address for a
// Prometheus to scrape, following one traffic shape, until the shape has
// played or it is interrupted.
//
//	go run ./test/fakeapp/cmd/fakeapp --kubeconfig ADMIN.kubeconfig --namespace ebbflow-demo
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ebbflow/ebbflow/test/exporter"
	"github.com/ebbflow/ebbflow/test/fakeapp"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "fakeapp:", err)
		os.Exit(1)
	}
}

// run parses the flags, then simulates until the shape has played (plus
// --linger) or a signal arrives.
func run(args []string) error {
	fs := flag.NewFlagSet("fakeapp", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	listen := fs.String("listen", "127.0.0.1:9464", "loopback address serving /metrics")
	ns := fs.String("namespace", "ebbflow-demo", "namespace of the workloads")
	web := fs.String("web", "app=web", "label selector of the request-serving pods (empty: none)")
	service := fs.String("service", "web", "service label of the request counters")
	worker := fs.String("worker", "app=worker", "label selector of the queue workers (empty: no queue)")
	queue := fs.String("queue", "orders", "queue label of the queue gauge")
	consume := fs.Float64("consume", 10, "messages per second each Ready worker consumes")
	base := fs.Float64("base", 5, "base request rate (req/s); orders are produced at 0.6x the request rate")
	peak := fs.Float64("peak", 80, "peak request rate (req/s)")
	duration := fs.Duration("duration", 4*time.Minute, "length of the traffic shape")
	linger := fs.Duration("linger", time.Minute, "how long to keep serving the base rate after the shape")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	shape := func(scale float64) fakeapp.Profile {
		d := *duration
		return fakeapp.Shape{Base: *base * scale, Peak: *peak * scale,
			Lead: d / 16, RampUp: d / 4, Plateau: d / 4, RampDown: d / 4, Tail: d - d/16 - 3*(d/4)}.Profile()
	}
	sc := fakeapp.Config{Client: client}
	if *web != "" {
		sc.Services = []fakeapp.Service{{Namespace: *ns, Selector: *web, Service: *service, Rate: shape(1)}}
	}
	if *worker != "" {
		sc.Queues = []fakeapp.Queue{{Name: *queue, Namespace: *ns, Selector: *worker, Produce: shape(0.6), ConsumePerPod: *consume}}
	}
	exp := exporter.New()
	sc.Sink = exp
	sim, err := fakeapp.New(sc)
	if err != nil {
		return err
	}
	if err := exp.Listen(*listen); err != nil {
		return err
	}
	defer exp.Close()
	fmt.Printf("fakeapp: serving %s for %v\n", exp.URL(), *duration+*linger)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *duration+*linger)
	defer cancel()
	return sim.Run(ctx)
}
