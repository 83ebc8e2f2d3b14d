package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// shutdownTimeout bounds how long the health server may take to stop.
const shutdownTimeout = 5 * time.Second

// Run serves /healthz and /metrics and runs the controller — under leader
// election when enabled — until ctx ends, then shuts down gracefully: the
// workers finish their current item and a held lease is released. It
// returns an error when leadership is lost while ctx is still live, or when
// the health server fails.
func (c CompletedConfig) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watchdog := leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
	ln, err := net.Listen("tcp", c.Options.HealthAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", c.Options.HealthAddr, err)
	}
	srv := &http.Server{Handler: c.healthMux(watchdog), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			cancel(fmt.Errorf("health server: %w", err))
		}
	}()
	defer func() {
		sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer scancel()
		_ = srv.Shutdown(sctx)
	}()
	if !c.Options.LeaderElection.LeaderElect {
		err = c.runController(ctx, nil)
	} else {
		err = c.runElected(ctx, watchdog)
	}
	if cause := context.Cause(ctx); err == nil && cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause
	}
	return err
}

func (c CompletedConfig) healthMux(watchdog *leaderelection.HealthzAdaptor) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := watchdog.Check(r); err != nil {
			http.Error(w, "leader election: "+err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	mux.Handle("/metrics", promhttp.HandlerFor(c.Registry, promhttp.HandlerOpts{}))
	return mux
}

// runElected runs the controller while this replica holds the Lease.
func (c CompletedConfig) runElected(ctx context.Context, watchdog *leaderelection.HealthzAdaptor) error {
	logger := klog.FromContext(ctx)
	le := c.Options.LeaderElection
	lock := newLeaseGuard(&resourcelock.LeaseLock{
		LeaseMeta:  metaFor(le.ResourceNamespace, le.ResourceName),
		Client:     c.Kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: c.Identity},
	}, le.RenewDeadline.Duration)
	// The elector stops when ctx ends or when the controller returns by
	// itself (an error): then the lease is released.
	electCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	var started atomic.Bool
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   le.LeaseDuration.Duration,
		RenewDeadline:   le.RenewDeadline.Duration,
		RetryPeriod:     le.RetryPeriod.Duration,
		ReleaseOnCancel: true,
		Name:            le.ResourceName,
		WatchDog:        watchdog,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				started.Store(true)
				logger.Info("Became leader", "identity", c.Identity)
				done <- c.runController(ctx, lock)
				stop()
			},
			OnStoppedLeading: func() { logger.Info("Stopped leading", "identity", c.Identity) },
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	elector.Run(electCtx)
	if !started.Load() {
		return nil
	}
	err = <-done
	if err == nil && ctx.Err() == nil {
		return errors.New("leader election lost")
	}
	return err
}
