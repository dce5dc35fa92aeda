// Package scheduled fires EventBridge Scheduler schedules where nothing
// fires them (the in-process emulator has no schedules): it reads a
// one-time schedule's moment from its `at(...)` expression and builds the
// event its EventBridge target puts on the bus, as the bus delivers it to
// a rule's target. The soak, the end-to-end wake-up test and the wakeup
// package's tests share it, so that all three deliver the same envelope.
//
// Invariants: an expression that is not `at(yyyy-mm-ddThh:mm:ss)` and a
// target without EventBridge parameters are errors, never a guess; the
// moment is read in UTC (the waker writes UTC and no time zone).
package scheduled

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"
)

// Moment is when a one-time schedule's expression ("at(2026-12-05T15:30:02)")
// fires, in UTC.
func Moment(expression string) (time.Time, error) {
	inner, ok := strings.CutPrefix(expression, "at(")
	if inner, ok = strings.CutSuffix(inner, ")"); !ok {
		return time.Time{}, fmt.Errorf("scheduled: %q is not a one-time schedule's at(...) expression", expression)
	}
	at, err := time.Parse("2006-01-02T15:04:05", inner)
	if err != nil {
		return time.Time{}, fmt.Errorf("scheduled: %q: %w", expression, err)
	}
	return at.UTC(), nil
}

// Event is the EventBridge event a schedule's target puts on the bus when
// it fires at at, with id as the event's id: the target's source and
// detail type, its input as the detail.
func Event(id string, target *types.Target, at time.Time) ([]byte, error) {
	if target == nil || target.EventBridgeParameters == nil {
		return nil, fmt.Errorf("scheduled: target %+v puts no event on a bus", target)
	}
	input := aws.ToString(target.Input)
	if !json.Valid([]byte(input)) {
		return nil, fmt.Errorf("scheduled: target's input is not JSON: %q", input)
	}
	return json.Marshal(map[string]any{
		"version": "0", "id": id, "source": aws.ToString(target.EventBridgeParameters.Source),
		"detail-type": aws.ToString(target.EventBridgeParameters.DetailType), "account": "123456789012", "region": "us-east-1",
		"time": at.UTC().Format(time.RFC3339), "resources": []string{}, "detail": json.RawMessage(input),
	})
}
