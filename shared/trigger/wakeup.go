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

// wakeForExpiry schedules the table's next visit for the snapshot expiry
// (package wakeup), from the expiry step of this visit's chain, so that it
// does not wait for a writer's commit or the next sweep:
//
//   - after an expiry was planned, when the expiry's own interval
//     (icekeeper.expire.min-interval, or ICEKEEPER_MIN_INTERVAL when the
//     table sets none) ends, or when its next snapshot comes due
//     (r.NextExpiryDue) if that is later. Even with nothing more to come
//     due on this metadata: the job keeps the table's cooldown slot, so a
//     writer's commit meanwhile (an overwrite replacing the data a
//     snapshot just past the retention held) is coalesced without a visit,
//     and a sweep a moment before the slot ends skips it too (the soak's
//     overwrite tables waited two sweeps so);
//   - with nothing due, at the moment the next snapshot comes due (the
//     expiry's interval was not spent: its slot was given back);
//   - with nothing ever due, not at all.
//
// Best effort: a wake-up not scheduled leaves the table to its next event
// or sweep, as before, and is only logged.
func (d *Dispatcher) wakeForExpiry(ctx context.Context, log *slog.Logger, table string, r plan.Result, props map[string]string, intervalProp string) {
	if d.wakeups == nil {
		return
	}
	var at time.Time
	switch {
	case r.Outcome == plan.OutcomePlanned:
		iv, set := actionInterval(props, intervalProp)
		if !set {
			iv = d.s.MinInterval
		}
		at = d.now().Add(iv)
		if r.NextExpiryDue != nil && r.NextExpiryDue.After(at) {
			at = *r.NextExpiryDue
		}
	case r.NextExpiryDue != nil:
		at = *r.NextExpiryDue
	default:
		return
	}
	when, err := d.wakeups.Wake(context.WithoutCancel(ctx), table, at)
	if err != nil {
		log.Warn("the table's next expiry waits for its next event or sweep: schedule its wake-up", "wake_at", at.UTC(), "err", err.Error())
		return
	}
	log.Info("expiry wake-up scheduled", "wake_at", when.UTC(), "next_due", r.NextExpiryDue)
}
