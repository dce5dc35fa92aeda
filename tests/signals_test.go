package tests

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/athena"
	athenatypes "github.com/aws/aws-sdk-go-v2/service/athena/types"

	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/signals"
	"github.com/icekeeper/icekeeper/shared/trigger"
)

func athenaEvent(queryID string) []byte {
	b, _ := json.Marshal(map[string]any{"version": "0", "id": "athena-" + queryID, "source": "aws.athena", "detail-type": "Athena Query State Change",
		"detail": map[string]string{"currentState": "SUCCEEDED", "previousState": "RUNNING", "statementType": "DML", "queryExecutionId": queryID, "workgroupName": "primary"}})
	return b
}

// TestSignals_QueryEventsAreRecordedForGrantedTables: the sample query
// event and a succeeded Athena query (started in the emulator's Athena,
// whose GetQueryExecution the planner reads back) are recorded as the
// table's signals in advisory mode; a query on a table outside the
// grants is dropped.
func TestSignals_QueryEventsAreRecordedForGrantedTables(t *testing.T) {
	d := setupDispatch(t, config.ModeAdvisory, "demo")
	resp := d.handle(mustRead(t, filepath.Join("..", "events", "icekeeper-query.json")))
	if o := outcomeOf(t, resp, "demo.events"); o.Action != trigger.ActionObserved {
		t.Fatalf("query event outcome %+v", o)
	}

	ath := athena.NewFromConfig(cloud.Clients.Config)
	start := func(sql string) string {
		out, err := ath.StartQueryExecution(d.ctx, &athena.StartQueryExecutionInput{
			QueryString:           aws.String(sql),
			QueryExecutionContext: &athenatypes.QueryExecutionContext{Database: aws.String("demo")},
			WorkGroup:             aws.String("primary"),
		})
		if err != nil {
			t.Fatal(err)
		}
		return *out.QueryExecutionId
	}
	resp = d.handle(athenaEvent(start(`SELECT * FROM "events" WHERE "id" = 7 AND amount > 3`)))
	if o := outcomeOf(t, resp, "demo.events"); o.Action != trigger.ActionObserved {
		t.Fatalf("athena event outcome %+v", o)
	}
	resp = d.handle(athenaEvent(start(`SELECT * FROM sales.orders WHERE id = 1`)))
	if o := outcomeOf(t, resp, "sales.orders"); o.Skip != trigger.SkipNotGranted {
		t.Fatalf("ungranted table's outcome %+v", o)
	}

	store := signals.Store{DB: cloud.Clients.DynamoDB, TableName: d.cfg.JobsTable}
	days, err := store.Days(d.ctx, "demo.events", time.Now().AddDate(0, 0, -1), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(days) != 1 || days[0].Queries != 2 {
		t.Fatalf("days %+v, want one day of two queries", days)
	}
	if id := days[0].Columns["id"]; id.Filters != 2 || id.Point != 2 {
		t.Errorf("id %+v, want two point filters", id)
	}
	if amount := days[0].Columns["amount"]; amount.Filters != 2 || amount.Point != 0 {
		t.Errorf("amount %+v, want two range filters", amount)
	}
}
