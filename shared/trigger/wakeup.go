package trigger

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// WakeUps schedules a table's visit at a moment (wakeup.Waker): Wake for
// its snapshot expiry, WakeVisit for a visit as a writer's commit event
// makes one. Each returns the moment scheduled.
type WakeUps interface {
	Wake(ctx context.Context, table string, at time.Time) (time.Time, error)
	WakeVisit(ctx context.Context, table string, at time.Time) (time.Time, error)
}

// wakeWhenSlotEnds schedules a visit of the table for when its cooldown
// slot ends (ends, from the claim that found it held), because an event
// found the slot held: the table changed during its cooldown, and the
// event is coalesced into that visit instead of waiting for the table's
// next event or the next sweep. Without it a table written once during
// its cooldown, then not again, waited up to a sweep's period past the
// slot's end, and a table written every few minutes was visited only at
// its first commit after the slot ended, one commit of files past the
// count pacing had timed the slot for (docs/DESIGN.md section 8).
//
// The visit changes nothing by itself: it claims the slot as any event
// does, so an event that claims it first makes this one a skip (which
// schedules nothing new unless the slot was spent again: a job planned,
// whose table was written during the slot, is worth the next visit too).
// Best effort: a wake-up not scheduled leaves the table to its next event
// or sweep, as before, and is only logged.
func (d *Dispatcher) wakeWhenSlotEnds(ctx context.Context, log *slog.Logger, table string, ends time.Time) {
	if d.wakeups == nil || ends.IsZero() || d.s.Mode != config.ModeActive {
		return
	}
	if !d.slotWakes.first(table, ends, d.now()) {
		return
	}
	when, err := d.wakeups.WakeVisit(context.WithoutCancel(ctx), table, ends)
	if err != nil {
		d.slotWakes.forget(table, ends)
		log.Warn("the table's change during its cooldown waits for its next event or sweep: schedule its visit", "wake_at", ends.UTC(), "err", err.Error())
		return
	}
	log.Info("visit scheduled for the end of the cooldown", "wake_at", when.UTC())
}

// slotWakes is the slot ends a dispatcher scheduled visits for, by
// table. Safe for concurrent use; entries whose moment passed are dropped
// as new ones come, so it holds at most the tables in cooldown.
type slotWakes struct {
	mu sync.Mutex
	at map[string]time.Time
}

// first records ends for table and reports whether it is new.
func (w *slotWakes) first(table string, ends, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.at == nil {
		w.at = map[string]time.Time{}
	}
	if prev, ok := w.at[table]; ok && prev.Equal(ends) {
		return false
	}
	for t, at := range w.at {
		if at.Before(now) {
			delete(w.at, t)
		}
	}
	w.at[table] = ends
	return true
}

// forget drops table's entry if it is still ends (the wake-up failed).
func (w *slotWakes) forget(table string, ends time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if prev, ok := w.at[table]; ok && prev.Equal(ends) {
		delete(w.at, table)
	}
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
