package resourcemetrics

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"k8s.io/klog/v2"
)

// requestContext bounds the getter's work for one request: it ends with the
// request (the client went away), or after timeout (<= 0: no limit), and
// carries logger for the getter's logs.
func requestContext(ctx context.Context, logger klog.Logger, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx = klog.NewContext(ctx, logger)
	if timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, timeout)
}

// readError is what a request answers when the getter failed: an API status
// error as the getter gave it (its code and message reach the caller, e.g. a
// 503 naming the server a forwarding getter could not reach), anything else
// a 500 saying what failed to be read.
func readError(err error, what string) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	return apierrors.NewInternalError(fmt.Errorf("failed reading %s: %w", what, err))
}
