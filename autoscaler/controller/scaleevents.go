package controller

import (
	"fmt"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/behavior"
)

// The rescales the behavior's rate policies count are kept in memory, as
// upstream keeps them, and also stored on the object after each rescale, so
// that a replica taking over the leader election (or a restarted one) goes on
// counting them: without them a failover right after a step would let the
// policies allow a second full step within their period — a scale-up twice as
// fast, or an early scale-down where a policy such as "1 pod per 10 minutes"
// should hold. The stabilization windows' recommendations are not stored:
// a fresh history starts at the current replica count (as upstream after a
// restart), which only delays scaling by up to one window after a takeover.

// restoreScaleEvents reads the stored rescales on the first evaluation of an
// object by this process. An invalid value is reported and ignored.
func (ev *evaluation) restoreScaleEvents() {
	events, err := behavior.DecodeEvents(ev.obj.ScaleEvents, ev.now)
	if err != nil {
		where := "status.scaleEvents"
		if !ev.b.DecisionInStatus() {
			where = "annotation " + v1alpha1.ScaleEventsAnnotation
		}
		ev.warn("InvalidScaleEvents", fmt.Sprintf("%s ignored: %v", where, err))
		return
	}
	ev.hist.Events = events
}

// stageScaleEvents sets obj.ScaleEvents to what should be stored after a
// rescale and reports whether it changed. Only a rescale adds an event;
// entries that aged out are dropped on the next rescale, not by a write of
// their own.
func (ev *evaluation) stageScaleEvents(scaled bool) bool {
	if !scaled {
		return false
	}
	value := behavior.EncodeEvents(ev.obj.Spec.Behavior, ev.hist.Events, ev.c.deps.Clock.Now())
	if value == ev.obj.ScaleEvents {
		return false
	}
	ev.obj.ScaleEvents = value
	return true
}
