package trigger

import (
	"context"
	"log/slog"
	"time"

	"github.com/icekeeper/icekeeper/shared/plan"
)

// WakeUps schedules a table's visit at a moment (wakeup.Waker): it returns
// the moment scheduled.
type WakeUps interface {
	Wake(ctx context.Context, table string, at time.Time) (time.Time, error)
}

// wakeForExpiry schedules the table's next visit for when its next
// snapshot comes due for expiry (r.NextExpiryDue, from the expiry step of
// this visit's chain, planned or with nothing due), so that it does not
// wait for a writer's commit or the next sweep (package wakeup).
//
// After an expiry was planned the visit is no sooner than the expiry's own
// interval (icekeeper.expire.min-interval) allows, or the deployment's
// (ICEKEEPER_MIN_INTERVAL) when the table sets none: a busy table's
// snapshots come due one after another, and one wake-up an interval is
// enough. With nothing due the expiry's interval was not spent (its slot
// was given back), so the visit is at the moment itself.
//
// Best effort: a wake-up not scheduled leaves the table to its next event
// or sweep, as before, and is only logged.
func (d *Dispatcher) wakeForExpiry(ctx context.Context, log *slog.Logger, table string, r plan.Result, props map[string]string, intervalProp string) {
	if d.wakeups == nil || r.NextExpiryDue == nil {
		return
	}
	at := *r.NextExpiryDue
	if r.Outcome == plan.OutcomePlanned {
		iv, set := actionInterval(props, intervalProp)
		if !set {
			iv = d.s.MinInterval
		}
		if floor := d.now().Add(iv); at.Before(floor) {
			at = floor
		}
	}
	when, err := d.wakeups.Wake(context.WithoutCancel(ctx), table, at)
	if err != nil {
		log.Warn("the table's next expiry waits for its next event or sweep: schedule its wake-up", "next_due", r.NextExpiryDue.UTC(), "err", err.Error())
		return
	}
	log.Info("expiry wake-up scheduled", "wake_at", when.UTC(), "next_due", r.NextExpiryDue.UTC())
}
