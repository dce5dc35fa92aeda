// Package wakeup schedules a table's next planner visit for its snapshot
// expiry (when its next snapshot comes due, expire.NextDue, or when the
// expiry's interval ends; the moment is the planner's, trigger's
// wakeForExpiry), with an EventBridge Scheduler one-time schedule that
// puts a chain continuation on icekeeper's bus: an "Icekeeper Compaction Continues" event whose
// resume_after is rewrite-manifests, so the planner plans only the
// snapshot expiry (events.Continuation; docs/FORMATS.md). WakeVisit
// schedules a visit as a writer's commit event makes one (an "Iceberg
// Table Committed" event from icekeeper), for when a table's cooldown
// ends after an event found it held (trigger's wakeWhenSlotEnds).
//
// Without it a table nobody writes waits for the next sweep once its
// snapshot passes the retention, and one whose cooldown ends just after a
// sweep waits for the sweep after that: up to the interval plus the
// sweep's period past the retention (docs/DESIGN.md section 16).
//
// Invariants:
//   - a wake-up changes nothing by itself: the planner visits the table as
//     for any continuation (grant, opt-in, the expiry's own interval and
//     the lease all apply), so a wake-up early, late, twice or never
//     expires nothing a visit would not;
//   - one schedule per table and second: the schedule's name is a hash of
//     the table and the moment, so the visits that find the same snapshot
//     next due create it once (EventBridge Scheduler's ConflictException
//     is success);
//   - a schedule deletes itself once it fired (ActionAfterCompletion
//     DELETE), so the account's quota of schedules holds only wake-ups to
//     come.
package wakeup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/icekeeper/icekeeper/events"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/messages"
)

// Scheduler is the subset of the EventBridge Scheduler client a Waker
// needs.
type Scheduler interface {
	CreateSchedule(ctx context.Context, in *scheduler.CreateScheduleInput, opts ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error)
}

// DefaultLead is the least time ahead a wake-up is scheduled (Waker.Lead):
// EventBridge Scheduler invokes a one-time schedule at its moment, and a
// moment that passed while the request was in flight is one nobody would
// see fire.
const DefaultLead = time.Minute

// ResumeAfter is the wake-up's continuation: after the manifest rewrite,
// the chain holds only the snapshot expiry.
const ResumeAfter = string(jobs.KindRewriteManifests)

// Waker creates the wake-ups of one deployment.
type Waker struct {
	client Scheduler
	// group is the schedule group the wake-ups go in (the stack's).
	group string
	// bus is the ARN of icekeeper's event bus, the schedules' target.
	bus string
	// role is the ARN of the role EventBridge Scheduler assumes to put
	// the event on the bus.
	role string
	now  func() time.Time
	// Lead is the least time ahead a wake-up is scheduled (DefaultLead;
	// the soak scales it with its clock).
	Lead time.Duration
}

// New validates its arguments and returns a Waker.
func New(client Scheduler, group, busARN, roleARN string, now func() time.Time) (*Waker, error) {
	switch {
	case client == nil:
		return nil, errors.New("wakeup: nil EventBridge Scheduler client")
	case group == "" || busARN == "" || roleARN == "":
		return nil, fmt.Errorf("wakeup: the schedule group (%q), the event bus's ARN (%q) and the scheduler's role ARN (%q) are all required", group, busARN, roleARN)
	}
	if now == nil {
		now = time.Now
	}
	return &Waker{client: client, group: group, bus: busARN, role: roleARN, now: now, Lead: DefaultLead}, nil
}

// Wake schedules a visit of table (namespace.table) at at, or w.Lead from
// now if that is later, rounded up to the second (a schedule's
// resolution). It returns the moment scheduled; a wake-up already
// scheduled for that moment is success.
func (w *Waker) Wake(ctx context.Context, table string, at time.Time) (time.Time, error) {
	at, ident, err := w.moment(table, at)
	if err != nil {
		return at, err
	}
	detail, err := events.NewChainContinuation(ident, "wake-up-"+at.Format("20060102T150405Z"), ResumeAfter)
	if err != nil {
		return at, fmt.Errorf("wakeup: %w", err)
	}
	input, err := json.Marshal(detail)
	if err != nil {
		return at, fmt.Errorf("wakeup: encode the wake-up of %s: %w", table, err)
	}
	return at, w.schedule(ctx, table, Name(table, at), at, events.DetailTypeContinue, input, "icekeeper: the next snapshot expiry of "+table)
}

// WakeVisit schedules a visit of table (namespace.table) at at, or w.Lead
// from now if that is later, rounded up to the second: an "Iceberg Table
// Committed" event from icekeeper naming the table, which the planner
// handles as any writer's commit event (it claims the table's cooldown
// slot first). Its schedule's name is VisitName's, so an expiry wake-up at
// the same second is another schedule. It returns the moment scheduled; a
// visit already scheduled for that moment is success.
func (w *Waker) WakeVisit(ctx context.Context, table string, at time.Time) (time.Time, error) {
	at, ident, err := w.moment(table, at)
	if err != nil {
		return at, err
	}
	input, err := json.Marshal(events.NewCommitDetail(ident))
	if err != nil {
		return at, fmt.Errorf("wakeup: encode the visit of %s: %w", table, err)
	}
	return at, w.schedule(ctx, table, VisitName(table, at), at, events.DetailTypeCommit, input, "icekeeper: a visit of "+table+" when its cooldown ends")
}

// moment is when a wake-up asked for at fires: at, or w.Lead from now if
// that is later, rounded up to the second (a schedule's resolution); and
// the table's identifier.
func (w *Waker) moment(table string, at time.Time) (time.Time, []string, error) {
	if earliest := w.now().Add(w.Lead); at.Before(earliest) {
		at = earliest
	}
	at = at.UTC().Truncate(time.Second).Add(time.Second)
	ident, err := messages.TableIdent(table)
	if err != nil {
		return at, nil, fmt.Errorf("wakeup: %w", err)
	}
	return at, ident, nil
}

// schedule creates the one-time schedule name at at that puts an event of
// detailType from icekeeper with detail input on the bus; one that exists
// already is success (EventBridge Scheduler's ConflictException).
func (w *Waker) schedule(ctx context.Context, table, name string, at time.Time, detailType string, input []byte, description string) error {
	_, err := w.client.CreateSchedule(ctx, &scheduler.CreateScheduleInput{
		Name:                       aws.String(name),
		GroupName:                  aws.String(w.group),
		ScheduleExpression:         aws.String(Expression(at)),
		ScheduleExpressionTimezone: aws.String("UTC"),
		FlexibleTimeWindow:         &types.FlexibleTimeWindow{Mode: types.FlexibleTimeWindowModeOff},
		ActionAfterCompletion:      types.ActionAfterCompletionDelete,
		Description:                aws.String(description),
		Target: &types.Target{
			Arn: aws.String(w.bus), RoleArn: aws.String(w.role), Input: aws.String(string(input)),
			EventBridgeParameters: &types.EventBridgeParameters{DetailType: aws.String(detailType), Source: aws.String(events.SourceCommit)},
		},
	})
	var conflict *types.ConflictException
	if errors.As(err, &conflict) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("wakeup: schedule %s in group %s for %s: %w", name, w.group, table, err)
	}
	return nil
}

// Name is the schedule's name for a table's wake-up at at: "icekeeper-",
// 24 hex digits of the table name's SHA-256, and the moment (UTC, to the
// second). 50 characters of [0-9a-zA-Z-_.], within EventBridge
// Scheduler's 64 (API reference, CreateSchedule, Name): a table's own name
// may hold characters a schedule's may not, and be longer.
func Name(table string, at time.Time) string {
	sum := sha256.Sum256([]byte(table))
	return "icekeeper-" + hex.EncodeToString(sum[:12]) + "-" + at.UTC().Format("20060102T150405")
}

// VisitName is the schedule's name for a table's visit at at (WakeVisit):
// Name's, with "-v" after the moment (52 characters).
func VisitName(table string, at time.Time) string {
	return Name(table, at) + "-v"
}

// Expression is EventBridge Scheduler's one-time expression for at, in
// UTC: at(yyyy-mm-ddThh:mm:ss).
func Expression(at time.Time) string {
	return "at(" + at.UTC().Format("2006-01-02T15:04:05") + ")"
}
