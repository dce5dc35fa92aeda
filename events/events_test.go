package events

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"testing"
)

func TestDecode_SampleEvents(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want Trigger
	}{
		{"scheduled.json", Trigger{Kind: KindSchedule, Sweep: true, ID: "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa"}},
		{"orphan-schedule.json", Trigger{Kind: KindOrphanSchedule, Sweep: true, ID: "9f1a7d3e-5b2c-4e8a-9c1d-2f3e4a5b6c7d"}},
		{"summary-schedule.json", Trigger{Kind: KindSummarySchedule, Sweep: true, ID: "4c8e2a6f-1b3d-4e5f-a7b9-0c2d4e6f8a1b"}},
		{"glue-table-state-change.json", Trigger{Kind: KindGlue, Tables: []string{"demo.events"}, ID: "2617428d-715f-edef-70b9-bd2eb6f1c8c7"}},
		{"glue-database-state-change.json", Trigger{Kind: KindGlueDB, Tables: []string{"demo.events"}, ID: "5089ddb8-2ab5-4739-7323-8519741f53d7"}},
		{"s3-metadata-object-created.json", Trigger{Kind: KindS3, Locations: []string{"s3://lakehouse/warehouse/demo.db/events"}, ID: "17793124-05d4-b198-2fde-7ededc63b103"}},
		{"icekeeper-commit.json", Trigger{Kind: KindCommit, Tables: []string{"demo.events"}, ID: "6a7e8feb-b491-4cf7-a9f1-bf3703467718"}},
		{"icekeeper-continue.json", Trigger{Kind: KindContinue, Tables: []string{"demo.events"}, ID: "c4d1a9e2-7b3f-4e6a-8d2c-1f0e9a8b7c6d", ContinuesJob: "demo.events-1764626700000-3f9a"}},
		{"icekeeper-query.json", Trigger{Kind: KindQuery, Tables: []string{"demo.events"}, ID: "0b4c2f7e-2d2b-4a6b-9a61-3b8e4c6a1f20", Query: &Query{
			Columns:      []QueryColumn{{Column: "id", Predicate: "eq"}, {Column: "amount", Predicate: "range"}},
			BytesScanned: 73400320, RowsReturned: 12, Engine: "trino", QueryID: "20261201_091500_00042_abcde", Partitions: []string{"region=region-01"},
			Class: "dashboard",
		}}},
		{"icekeeper-weekly-summary.json", Trigger{Kind: KindSummary, ID: "2b7f3c1e-9a4d-4f61-8e2b-5c0d7a9e3f18", Ignored: "the weekly summary is icekeeper's own report: it wakes no table"}},
		{"athena-query-state-change.json", Trigger{Kind: KindAthena, ID: "abcdef00-1234-5678-9abc-def012345678", AthenaQueryID: "01234567-0123-0123-0123-012345678901"}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			raw, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Decode(raw)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDecode_GlueDatabaseEventListsEveryCreatedTableOnce(t *testing.T) {
	t.Parallel()
	raw := `{"detail-type":"Glue Data Catalog Database State Change","source":"aws.glue","id":"x",
	  "detail":{"databaseName":"db","changedTables":["b","a","b"],"typeOfChange":"CreateTable"}}`
	got, err := Decode([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"db.a", "db.b"}; !reflect.DeepEqual(got.Tables, want) || got.Ignored != "" {
		t.Fatalf("got %+v, want tables %v", got, want)
	}
}

// TestDecode_GlueChangesThatTouchNoTableDataWakeNothing: dropped tables,
// databases and Glue partition calls (which an Iceberg commit never makes)
// decode without error, name no table and say why.
func TestDecode_GlueChangesThatTouchNoTableDataWakeNothing(t *testing.T) {
	t.Parallel()
	for name, raw := range map[string]string{
		"delete table":       `{"detail-type":"Glue Data Catalog Database State Change","source":"aws.glue","detail":{"databaseName":"db","changedTables":["t"],"typeOfChange":"DeleteTable"}}`,
		"batch delete table": `{"detail-type":"Glue Data Catalog Database State Change","source":"aws.glue","detail":{"databaseName":"db","changedTables":["t","u"],"typeOfChange":"BatchDeleteTable"}}`,
		"create database":    `{"detail-type":"Glue Data Catalog Database State Change","source":"aws.glue","detail":{"databaseName":"db","typeOfChange":"CreateDatabase"}}`,
		"create partition":   `{"detail-type":"Glue Data Catalog Table State Change","source":"aws.glue","detail":{"databaseName":"db","tableName":"t","typeOfChange":"CreatePartition","changedPartitions":["[2026-11-30]"]}}`,
		"batch update parts": `{"detail-type":"Glue Data Catalog Table State Change","source":"aws.glue","detail":{"databaseName":"db","tableName":"t","typeOfChange":"BatchUpdatePartition","changedPartitions":["[a]","[b]"]}}`,
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Decode([]byte(raw))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if len(got.Tables) != 0 || got.Ignored == "" {
				t.Fatalf("got %+v, want no table and a reason", got)
			}
		})
	}
}

func TestDecode_RejectsMalformedOrUnknownEvents(t *testing.T) {
	t.Parallel()
	for name, raw := range map[string]string{
		"not json":            `{"detail-type":`,
		"empty object":        `{}`,
		"unknown source":      `{"detail-type":"Object Deleted","source":"aws.s3","detail":{}}`,
		"s3 data file":        `{"detail-type":"Object Created","source":"aws.s3","detail":{"bucket":{"name":"b"},"object":{"key":"wh/t/data/x.parquet"}}}`,
		"s3 no key":           `{"detail-type":"Object Created","source":"aws.s3","detail":{"bucket":{"name":"b"}}}`,
		"s3 nested meta":      `{"detail-type":"Object Created","source":"aws.s3","detail":{"bucket":{"name":"b"},"object":{"key":"wh/t/metadata/snap/x.metadata.json"}}}`,
		"commit no table":     `{"detail-type":"Iceberg Table Committed","source":"icekeeper","detail":{"namespace":"db"}}`,
		"commit bad ns":       `{"detail-type":"Iceberg Table Committed","source":"icekeeper","detail":{"namespace":7,"table":"t"}}`,
		"s3 short key":        `{"detail-type":"Object Created","source":"aws.s3","detail":{"bucket":{"name":"b"},"object":{"key":"x"}}}`,
		"commit dotted level": `{"detail-type":"Iceberg Table Committed","source":"icekeeper","detail":{"namespace":["a.b","c"],"table":"t"}}`,
		"spoofed source":      `{"detail-type":"Iceberg Table Committed","source":"aws.glue","detail":{"namespace":"db","table":"t"}}`,
		"glue no db":          `{"detail-type":"Glue Data Catalog Table State Change","source":"aws.glue","detail":{"tableName":"t","typeOfChange":"UpdateTable"}}`,
		"glue no table":       `{"detail-type":"Glue Data Catalog Table State Change","source":"aws.glue","detail":{"databaseName":"d","typeOfChange":"UpdateTable"}}`,
		"glue old shape":      `{"detail-type":"Glue Data Catalog Table State Change","source":"aws.glue","detail":{"databaseName":"d","changedTables":["t"],"typeOfChange":"UpdateTable"}}`,
		"glue no change type": `{"detail-type":"Glue Data Catalog Table State Change","source":"aws.glue","detail":{"databaseName":"d","tableName":"t"}}`,
		"glue bad detail":     `{"detail-type":"Glue Data Catalog Table State Change","source":"aws.glue","detail":[1]}`,
		"glue dotted":         `{"detail-type":"Glue Data Catalog Table State Change","source":"aws.glue","detail":{"databaseName":"d","tableName":"a.b","typeOfChange":"UpdateTable"}}`,
		"glue db no tables":   `{"detail-type":"Glue Data Catalog Database State Change","source":"aws.glue","detail":{"databaseName":"d","typeOfChange":"CreateTable"}}`,
		"query no table":      `{"detail-type":"Icekeeper Query Observed","source":"icekeeper","detail":{"namespace":"db","columns":[]}}`,
		"query bad predicate": `{"detail-type":"Icekeeper Query Observed","source":"icekeeper","detail":{"namespace":"db","table":"t","columns":[{"column":"id","predicate":"between"}]}}`,
		"query no column":     `{"detail-type":"Icekeeper Query Observed","source":"icekeeper","detail":{"namespace":"db","table":"t","columns":[{"predicate":"eq"}]}}`,
		"query negative":      `{"detail-type":"Icekeeper Query Observed","source":"icekeeper","detail":{"namespace":"db","table":"t","bytes_scanned":-1}}`,
		"query bad partition": `{"detail-type":"Icekeeper Query Observed","source":"icekeeper","detail":{"namespace":"db","table":"t","partitions":["eu"]}}`,
		"query spoofed":       `{"detail-type":"Icekeeper Query Observed","source":"aws.athena","detail":{"namespace":"db","table":"t"}}`,
		"athena no id":        `{"detail-type":"Athena Query State Change","source":"aws.athena","detail":{"currentState":"SUCCEEDED","statementType":"DML"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Decode([]byte(raw))
			if !errors.Is(err, ErrRejected) {
				t.Fatalf("err = %v, want ErrRejected", err)
			}
		})
	}
}

func TestDecode_AthenaQueriesThatAreNotSignalsWakeNothing(t *testing.T) {
	t.Parallel()
	for name, detail := range map[string]string{
		"failed":  `{"currentState":"FAILED","statementType":"DML","queryExecutionId":"q"}`,
		"running": `{"currentState":"RUNNING","statementType":"DML","queryExecutionId":"q"}`,
		"ddl":     `{"currentState":"SUCCEEDED","statementType":"DDL","queryExecutionId":"q"}`,
	} {
		got, err := Decode([]byte(`{"detail-type":"Athena Query State Change","source":"aws.athena","id":"e","detail":` + detail + `}`))
		if err != nil || got.Ignored == "" || got.AthenaQueryID != "" {
			t.Errorf("%s: %+v %v, want ignored", name, got, err)
		}
	}
}

func TestDecode_CommitEventAcceptsNestedNamespaces(t *testing.T) {
	t.Parallel()
	for _, ns := range []string{`"lake.raw"`, `["lake","raw"]`} {
		got, err := Decode([]byte(`{"detail-type":"Iceberg Table Committed","source":"icekeeper","detail":{"namespace":` + ns + `,"table":"events"}}`))
		if err != nil || !reflect.DeepEqual(got.Tables, []string{"lake.raw.events"}) {
			t.Fatalf("namespace %s: %+v %v", ns, got, err)
		}
	}
}

func TestDecode_S3KeysAreURLDecoded(t *testing.T) {
	t.Parallel()
	got, err := Decode([]byte(`{"detail-type":"Object Created","source":"aws.s3","detail":{"bucket":{"name":"b"},"object":{"key":"wh/my+db.db/t%3D1/metadata/00001-x.metadata.json"}}}`))
	if err != nil || !reflect.DeepEqual(got.Locations, []string{"s3://b/wh/my db.db/t=1"}) {
		t.Fatalf("%+v %v", got, err)
	}
}

// TestDecode_ContinuationRoundTripsWhatTheCommitterPuts: the detail the
// committer builds for a nested namespace decodes to the same table, and a
// continuation without a job id or table is rejected.
func TestDecode_ContinuationRoundTripsWhatTheCommitterPuts(t *testing.T) {
	t.Parallel()
	c, err := NewContinuation([]string{"lake", "sales", "orders"}, "job-7", 3, 4096)
	if err != nil {
		t.Fatal(err)
	}
	detail, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	raw := `{"detail-type":"` + DetailTypeContinue + `","source":"` + SourceCommit + `","id":"e1","detail":` + string(detail) + `}`
	got, err := Decode([]byte(raw))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if want := (Trigger{Kind: KindContinue, Tables: []string{"lake.sales.orders"}, ID: "e1", ContinuesJob: "job-7"}); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if _, err := NewContinuation([]string{"orders"}, "job-7", 1, 1); err == nil {
		t.Fatal("a continuation of a table without a namespace was built")
	}
	c, err = NewChainContinuation([]string{"sales", "orders"}, "job-8", "compaction")
	if err != nil {
		t.Fatal(err)
	}
	detail, _ = json.Marshal(c)
	raw = `{"detail-type":"` + DetailTypeContinue + `","source":"` + SourceCommit + `","id":"e3","detail":` + string(detail) + `}`
	if got, err := Decode([]byte(raw)); err != nil || got.ResumeAfter != "compaction" || got.ContinuesJob != "job-8" || got.Tables[0] != "sales.orders" {
		t.Fatalf("chain continuation decoded to %+v, %v", got, err)
	}
	if _, err := NewChainContinuation([]string{"sales", "orders"}, "job-8", " "); err == nil {
		t.Fatal("a chain continuation without the kind it resumes after was built")
	}
	for name, d := range map[string]string{
		"no job id": `{"namespace":["demo"],"table":"events"}`,
		"no table":  `{"namespace":["demo"],"job_id":"j"}`,
	} {
		raw := `{"detail-type":"` + DetailTypeContinue + `","source":"icekeeper","id":"e2","detail":` + d + `}`
		if _, err := Decode([]byte(raw)); !errors.Is(err, ErrRejected) {
			t.Errorf("%s: got %v, want ErrRejected", name, err)
		}
	}
}
