package scheduled

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"
)

// TestMoment_ReadsOneTimeSchedulesOnly: an at() expression is its moment
// in UTC; a rate, a cron or a malformed moment is an error.
func TestMoment_ReadsOneTimeSchedulesOnly(t *testing.T) {
	at, err := Moment("at(2026-12-05T15:30:02)")
	if err != nil || !at.Equal(time.Date(2026, 12, 5, 15, 30, 2, 0, time.UTC)) || at.Location() != time.UTC {
		t.Fatalf("Moment = %v, %v", at, err)
	}
	for _, bad := range []string{"rate(5 minutes)", "cron(0 12 * * ? *)", "at(2026-12-05 15:30:02)", "at(2026-12-05T15:30:02", ""} {
		if _, err := Moment(bad); err == nil {
			t.Errorf("Moment(%q) accepted", bad)
		}
	}
}

// TestEvent_IsTheTargetsEventAsTheBusDeliversIt: source, detail type and
// input become the envelope's; a target that is not a bus's is refused.
func TestEvent_IsTheTargetsEventAsTheBusDeliversIt(t *testing.T) {
	tg := &types.Target{Arn: aws.String("arn:aws:events:us-east-1:123456789012:event-bus/b"), Input: aws.String(`{"k":1}`),
		EventBridgeParameters: &types.EventBridgeParameters{Source: aws.String("icekeeper"), DetailType: aws.String("D")}}
	raw, err := Event("e1", tg, time.Date(2026, 12, 5, 15, 30, 2, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		ID         string          `json:"id"`
		Source     string          `json:"source"`
		DetailType string          `json:"detail-type"`
		Time       string          `json:"time"`
		Detail     json.RawMessage `json:"detail"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.ID != "e1" || got.Source != "icekeeper" || got.DetailType != "D" || got.Time != "2026-12-05T15:30:02Z" || string(got.Detail) != `{"k":1}` {
		t.Fatalf("event %s", raw)
	}
	if _, err := Event("e2", &types.Target{Arn: tg.Arn, Input: tg.Input}, time.Now()); err == nil {
		t.Fatal("a target without EventBridge parameters made an event")
	}
	tg.Input = aws.String("not json")
	if _, err := Event("e3", tg, time.Now()); err == nil {
		t.Fatal("a target whose input is not JSON made an event")
	}
}
