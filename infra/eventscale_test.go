package main

import (
	"fmt"
	"strings"
	"testing"
)

// rulesOf are the synthesized rules whose logical id starts with prefix,
// by logical id, with their event patterns.
func (f *fixture) rulesOf(prefix string) map[string]any {
	out := map[string]any{}
	for id, r := range f.ofType("AWS::Events::Rule") {
		if strings.HasPrefix(id, prefix) {
			out[id] = props(r)["EventPattern"]
		}
	}
	return out
}

// matchingRules are the ids of the rules whose pattern matches ev.
func matchingRules(rules map[string]any, ev map[string]any) []string {
	var out []string
	for id, p := range rules {
		if matches(p, ev) {
			out = append(out, id)
		}
	}
	return out
}

func s3Event(bucket, key string) map[string]any {
	return map[string]any{"source": SourceS3, "detail-type": DetailTypeS3, "detail": map[string]any{"bucket": map[string]any{"name": bucket}, "object": map[string]any{"key": key}}}
}

// TestIcekeeperStack_EventPatternsStayWithinEventBridgesQuota: every rule's
// pattern is at most 2,048 characters (EventBridge quotas,
// https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-quota.html).
// Granted databases too many for one Glue pattern are split across rules
// that together name each exactly once; granted locations too many for
// one S3 pattern are split across at most MaxWildcardRules wildcard
// rules, each granted table's metadata file matching one of them and no
// other table's; beyond that the S3 rules widen to the buckets' metadata
// files (suffix filters, no wildcard) and say so.
func TestIcekeeperStack_EventPatternsStayWithinEventBridgesQuota(t *testing.T) {
	namespaces := func(n int, name string) string {
		var g []string
		for i := 0; i < n; i++ {
			g = append(g, fmt.Sprintf(name, i)+".*")
		}
		return strings.Join(g, ",")
	}
	for _, c := range []struct {
		name      string
		grants    string
		wantGlue  int // rules, at least
		wantS3    int // rules, at least
		widened   bool
		databases int
	}{
		{name: "one database", grants: "demo.*", wantGlue: 1, wantS3: 1, databases: 1},
		{name: "20 databases", grants: namespaces(20, "sales_department_%02d"), wantGlue: 1, wantS3: 2, databases: 20},
		{name: "70 databases of long names", grants: namespaces(70, "marketing_attribution_events_%03d"), wantGlue: 2, wantS3: 1, widened: true, databases: 70},
		{name: "100 databases", grants: namespaces(100, "db%03d"), wantGlue: 1, wantS3: 1, widened: true, databases: 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := activeContext()
			ctx[CtxGrants] = c.grants
			ctx[CtxCatalogWarehouse] = "s3://lakehouse/warehouse"
			f := mustSynth(t, ctx)
			for id, r := range f.ofType("AWS::Events::Rule") {
				if p := props(r)["EventPattern"]; p != nil && EventPatternSize(p) > EventPatternLimit {
					t.Errorf("rule %s: pattern of %d characters, over EventBridge's %d", id, EventPatternSize(p), EventPatternLimit)
				}
			}
			glue, s3 := f.rulesOf("GlueTableChanges"), f.rulesOf("TableMetadataWritten")
			if len(glue) < c.wantGlue || len(s3) < c.wantS3 {
				t.Fatalf("%d Glue and %d S3 rules, want at least %d and %d", len(glue), len(s3), c.wantGlue, c.wantS3)
			}
			wildcards := 0
			for _, p := range s3 {
				if usesWildcard(p) {
					wildcards++
				}
			}
			if c.widened != (wildcards == 0) || wildcards > MaxWildcardRules {
				t.Fatalf("%d of %d S3 rules use wildcards (widened: %v, at most %d)", wildcards, len(s3), c.widened, MaxWildcardRules)
			}
			settings, _ := ParseGrants(c.grants)
			if got := len(settings.Databases()); got != c.databases {
				t.Fatalf("%d databases granted, want %d", got, c.databases)
			}
			for _, db := range settings.Databases() {
				ev := map[string]any{"source": SourceGlue, "detail-type": DetailTypeGlue, "detail": map[string]any{"databaseName": db, "tableName": "t", "typeOfChange": "UpdateTable"}}
				if m := matchingRules(glue, ev); len(m) != 1 {
					t.Errorf("an UpdateTable in %s matches Glue rules %v, want exactly one", db, m)
				}
				for _, key := range []string{"warehouse/" + db + ".db/t/metadata/00003-x.metadata.json", "warehouse/" + db + ".db/t/metadata/00003-x.metadata.json.gz"} {
					if m := matchingRules(s3, s3Event("lakehouse", key)); len(m) != 1 {
						t.Errorf("%s matches S3 rules %v, want exactly one", key, m)
					}
				}
				if m := matchingRules(s3, s3Event("lakehouse", "warehouse/"+db+".db/t/data/x.parquet")); len(m) != 0 {
					t.Errorf("a data file of %s matches S3 rules %v", db, m)
				}
			}
			if m := matchingRules(glue, map[string]any{"source": SourceGlue, "detail-type": DetailTypeGlue, "detail": map[string]any{"databaseName": "ungranted", "tableName": "t", "typeOfChange": "UpdateTable"}}); len(m) != 0 {
				t.Errorf("an ungranted database matches Glue rules %v", m)
			}
			if m := matchingRules(s3, s3Event("otherbucket", "warehouse/x.db/t/metadata/1.metadata.json")); len(m) != 0 {
				t.Errorf("another bucket matches S3 rules %v", m)
			}
			ungranted := matchingRules(s3, s3Event("lakehouse", "warehouse/ungranted.db/t/metadata/00001-x.metadata.json"))
			if c.widened != (len(ungranted) > 0) {
				t.Errorf("an ungranted table's metadata file matches S3 rules %v (widened: %v)", ungranted, c.widened)
			}
			warned := false
			for _, a := range f.warnings(t) {
				warned = warned || strings.Contains(a, "icekeeper:event-scope")
			}
			if warned != c.widened {
				t.Errorf("event-scope warning %v, want %v", warned, c.widened)
			}
		})
	}
}
