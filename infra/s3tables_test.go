package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/jsii-runtime-go"
)

const testTableBucket = "arn:aws:s3tables:eu-west-1:123456789012:bucket/lake"

// s3tablesContext is an S3 Tables deployment: the table bucket's Iceberg
// REST endpoint, one granted namespace and one granted table.
func s3tablesContext() map[string]any {
	return map[string]any{
		CtxMode:               "active",
		CtxGrants:             "analytics.*,sales.orders",
		CtxCatalogType:        "rest",
		CtxCatalogURI:         "https://s3tables.eu-west-1.amazonaws.com/iceberg",
		CtxCatalogWarehouse:   testTableBucket,
		CtxCatalogSigV4:       "true",
		CtxCatalogSigningName: "s3tables",
		CtxAlarmEmail:         "ops@example.com",
	}
}

// s3tablesActions maps each s3tables: action of a function to the
// conditions of the statements that grant it, rendered as JSON.
func (f *fixture) s3tablesGrants(t *testing.T, name string) map[string][]string {
	out := map[string][]string{}
	for _, s := range f.statements(t, name) {
		for _, a := range s.Actions {
			if strings.HasPrefix(a, "s3tables:") {
				c, _ := json.Marshal(s.Condition)
				out[a] = append(out[a], strings.Join(s.Resources, ",")+" if "+string(c))
			}
		}
	}
	return out
}

// TestS3Tables_PermissionsAreScopedToGrantedNamespacesAndTables: every
// s3tables: table action is on bucket/<name>/table/* under a condition on
// the granted namespaces (or the granted table's namespace and name), the
// bucket actions on the bucket itself; nothing reaches a general purpose
// bucket's objects, and no function may delete a table or use a wildcard.
func TestS3Tables_PermissionsAreScopedToGrantedNamespacesAndTables(t *testing.T) {
	f := mustSynth(t, s3tablesContext())
	nsCond := `{"StringEquals":{"s3tables:namespace":["analytics"]}}`
	tableCond := `{"StringEquals":{"s3tables:namespace":"sales","s3tables:tableName":"orders"}}`
	tables := testTableBucket + "/table/*"
	bucketOnly := []string{testTableBucket + " if null"}
	onTables := []string{tables + " if " + nsCond, tables + " if " + tableCond}
	want := map[string]map[string][]string{
		"Planner": {
			// ListTables only within the granted namespaces (the sweep).
			"s3tables:GetTableBucket": bucketOnly, "s3tables:ListTables": []string{testTableBucket + " if " + nsCond},
			"s3tables:GetTableMetadataLocation": onTables, "s3tables:GetTableData": onTables,
		},
		"Rewriter": {
			"s3tables:GetTableData": onTables, "s3tables:PutTableData": onTables,
		},
		"Committer": {
			"s3tables:GetTableBucket":           bucketOnly,
			"s3tables:GetTableMetadataLocation": onTables, "s3tables:GetTableData": onTables,
			"s3tables:PutTableData": onTables, "s3tables:UpdateTableMetadataLocation": onTables,
		},
	}
	for _, fn := range functionIDs {
		got := f.s3tablesGrants(t, fn)
		if !reflect.DeepEqual(got, want[fn]) {
			t.Errorf("%s s3tables grants:\n got  %v\n want %v", fn, got, want[fn])
		}
		for a := range f.actions(t, fn) {
			if strings.Contains(a, "*") || strings.Contains(a, "Delete") && strings.HasPrefix(a, "s3tables:") {
				t.Errorf("%s may %s", fn, a)
			}
		}
		if r := f.tableResources(t, fn); len(r) > 0 {
			t.Errorf("%s reaches S3 or Glue resources outside icekeeper: %v", fn, r)
		}
	}
}

// TestS3Tables_PlannerWakesBySweepAndCustomEvents: table buckets send no
// S3 object events and Glue does not describe them, so the planner's
// rules are the sweep and the custom commit event; the stack warns of
// nothing it leaves to the operator.
func TestS3Tables_PlannerWakesBySweepAndCustomEvents(t *testing.T) {
	f := mustSynth(t, s3tablesContext())
	// Sweep, orphans, summary, commit, continuation, and the two query
	// signal rules.
	assert(t, "the sweep, orphan, summary and custom event rules", func() { f.tpl.ResourceCountIs(jsii.String("AWS::Events::Rule"), jsii.Number(7)) })
	meta, _ := (*f.tpl.ToJSON())["Metadata"].(map[string]any)
	summary, _ := meta["Icekeeper::Settings"].(string)
	if strings.Contains(summary, "table location") || !strings.Contains(summary, "table bucket "+testTableBucket) {
		t.Errorf("the deployed summary should name the table bucket and no S3 location:\n%s", summary)
	}
}

// TestS3Tables_RejectsSettingsATableBucketCannotHonour.
func TestS3Tables_RejectsSettingsATableBucketCannotHonour(t *testing.T) {
	cases := map[string]struct {
		change map[string]any
		want   string
	}{
		"nested namespace":     {map[string]any{CtxGrants: "a.b.*"}, "one level of [0-9a-z_]"},
		"upper-case table":     {map[string]any{CtxGrants: "sales.Orders"}, "one level of [0-9a-z_]"},
		"table locations":      {map[string]any{CtxTableLocations: `{"analytics.*":"s3://x/y"}`}, "chooses its tables' locations"},
		"glue signing name":    {map[string]any{CtxCatalogSigningName: "glue"}, "signing name s3tables"},
		"no sigv4":             {map[string]any{CtxCatalogSigV4: "false"}, "signing name s3tables"},
		"glue catalog type":    {map[string]any{CtxCatalogType: "glue"}, "set catalogType rest"},
		"no endpoint":          {map[string]any{CtxCatalogURI: ""}, "https://s3tables.eu-west-1.amazonaws.com/iceberg"},
		"malformed ARN":        {map[string]any{CtxCatalogWarehouse: "arn:aws:s3tables:eu-west-1:123:bucket/lake"}, "want a table bucket ARN"},
		"s3 warehouse":         {map[string]any{CtxCatalogWarehouse: "s3://lake/wh"}, "takes the table bucket's ARN"},
		"other signing region": {map[string]any{CtxCatalogSigningRegion: "us-east-1"}, "the table bucket is in eu-west-1"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := s3tablesContext()
			for k, v := range c.change {
				ctx[k] = v
			}
			_, err := synth(t, ctx)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}
