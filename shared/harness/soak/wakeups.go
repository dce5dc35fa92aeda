package soak

// EventBridge Scheduler's side of the planner's expiry wake-ups (package
// wakeup): the emulator stores a schedule and never fires it, so the soak
// fires each one-time schedule at its moment, as the stack's would: the
// event its target names goes to the planner (the bus's rule for
// continuations), and the schedule is deleted (ActionAfterCompletion
// DELETE).

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/icekeeper/icekeeper/shared/harness/scheduled"
	"github.com/icekeeper/icekeeper/shared/wakeup"
)

// The soak's wake-up settings (config.Config's WakeUp fields).
const (
	wakeUpGroup   = "soak-wakeups"
	wakeUpRoleARN = "arn:aws:iam::123456789012:role/soak-scheduler"
	wakeUpBusARN  = "arn:aws:events:us-east-1:123456789012:event-bus/default"
)

// schedules is the planner's EventBridge Scheduler client: every request
// goes to the emulator (and the request counter), and the soak fires each
// schedule created.
type schedules struct {
	next  wakeup.Scheduler
	admin *scheduler.Client // the emulator, uncounted: the service's own deletion
	f     *fleet

	mu      sync.Mutex
	pending []pendingWakeUp
	fired   int64
}

type pendingWakeUp struct {
	at    time.Time
	name  string
	event []byte
}

func (s *schedules) CreateSchedule(ctx context.Context, in *scheduler.CreateScheduleInput, opts ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error) {
	out, err := s.next.CreateSchedule(ctx, in, opts...)
	if err != nil {
		return out, err
	}
	at, err := scheduled.Moment(aws.ToString(in.ScheduleExpression))
	if err != nil {
		return out, fmt.Errorf("soak: a wake-up the soak cannot fire: %w", err)
	}
	raw, err := scheduled.Event("soak-wakeup-"+aws.ToString(in.Name), in.Target, at)
	if err != nil {
		return out, fmt.Errorf("soak: a wake-up the soak cannot fire: %w", err)
	}
	s.mu.Lock()
	s.pending = append(s.pending, pendingWakeUp{at: at, name: aws.ToString(in.Name), event: raw})
	s.mu.Unlock()
	return out, nil
}

// fireDue fires the schedules whose moment has come, oldest first.
func (s *schedules) fireDue(ctx context.Context, now time.Time) {
	s.mu.Lock()
	sort.Slice(s.pending, func(i, j int) bool { return s.pending[i].at.Before(s.pending[j].at) })
	n := sort.Search(len(s.pending), func(i int) bool { return s.pending[i].at.After(now) })
	due := append([]pendingWakeUp(nil), s.pending[:n]...)
	s.pending = s.pending[n:]
	s.fired += int64(len(due))
	s.mu.Unlock()
	for _, w := range due {
		s.f.send(w.event)
		if _, err := s.admin.DeleteSchedule(ctx, &scheduler.DeleteScheduleInput{Name: aws.String(w.name), GroupName: aws.String(wakeUpGroup)}); err != nil && ctx.Err() == nil {
			fmt.Fprintf(s.f.o.Progress, "soak: delete the fired wake-up %s: %v\n", w.name, err)
		}
	}
}

// run fires the schedules until ctx ends.
func (s *schedules) run(ctx context.Context) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			s.fireDue(ctx, now)
		}
	}
}

// counts are the wake-ups fired and still pending.
func (s *schedules) counts() (fired, pending int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fired, int64(len(s.pending))
}
