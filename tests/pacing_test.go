package tests

import (
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/pacing"
	"github.com/icekeeper/icekeeper/shared/trigger"
)

// TestTriggers_ABusyTablesCooldownIsPacedToItsWriters: a table its
// writers just filled with small files, one commit each, gets a compaction
// on a commit event, and its cooldown slot ends at the pacing floor (a
// quarter of the deployment's hour), in the lease table, not after the
// hour: its writers would bring it past twice its optimum well before.
// An owner's own icekeeper.compaction.min-interval stands.
func TestTriggers_ABusyTablesCooldownIsPacedToItsWriters(t *testing.T) {
	for _, tc := range []struct {
		name  string
		props map[string]string
		want  time.Duration
	}{
		{"the deployment's interval, paced", optedIn, pacing.Floor(time.Hour)},
		{"the owner's interval", map[string]string{optin.PropertyEnabled: "true", optin.PropertyMinInterval: "2h"}, 2 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := setupDispatch(t, config.ModeActive, "demo", func(c *config.Config) { c.MinInterval = time.Hour })
			d.createNamed("demo.events", withProps(sampletable.Options{FormatVersion: 2, Partitions: 1, Files: 8, RowsPerFile: 20}, tc.props))
			before := time.Now()
			o := outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events")
			if o.Action != trigger.ActionPlanned {
				t.Fatalf("commit event: %+v, want a compaction planned", o)
			}
			out, err := cloud.Clients.DynamoDB.GetItem(d.ctx, &dynamodb.GetItemInput{TableName: aws.String(d.cfg.LeaseTable), ConsistentRead: aws.Bool(true),
				Key: map[string]ddbtypes.AttributeValue{"table_id": &ddbtypes.AttributeValueMemberS{Value: "demo.events"}}})
			if err != nil {
				t.Fatal(err)
			}
			n, ok := out.Item["next_plan_at"].(*ddbtypes.AttributeValueMemberN)
			if !ok {
				t.Fatalf("lease item %v has no next_plan_at", out.Item)
			}
			ms, err := strconv.ParseInt(n.Value, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			if got := time.UnixMilli(ms).Sub(before); got < tc.want || got > tc.want+time.Minute {
				t.Fatalf("next planning %v after the event, want %v", got.Round(time.Second), tc.want)
			}
			if o := outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events"); o.Skip != trigger.SkipCooldown {
				t.Fatalf("a second event: %+v, want coalesced", o)
			}
		})
	}
}
