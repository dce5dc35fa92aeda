package main

import (
	"encoding/json"
	"fmt"
	"sort"
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

// ruleMatcher matches events against rules with the test's own matcher
// (stack_test.go's matches) and records each event with its answer, so
// that event-ruler can be asked the same (crossCheck).
type ruleMatcher struct {
	rules   map[string]any
	events  []rulerEvent
	answers map[string][]string
}

func newRuleMatcher(rules ...map[string]any) *ruleMatcher {
	m := &ruleMatcher{rules: map[string]any{}, answers: map[string][]string{}}
	for _, rs := range rules {
		for id, p := range rs {
			m.rules[id] = p
		}
	}
	return m
}

// matching are the ids of the rules of prefix whose pattern matches ev.
func (m *ruleMatcher) matching(prefix string, ev map[string]any) []string {
	raw, _ := json.Marshal(ev)
	name := string(raw)
	if _, seen := m.answers[name]; !seen {
		var all []string
		for id, p := range m.rules {
			if matches(p, ev) {
				all = append(all, id)
			}
		}
		sort.Strings(all)
		m.answers[name] = all
		m.events = append(m.events, rulerEvent{Name: name, Event: ev})
	}
	var out []string
	for _, id := range m.answers[name] {
		if strings.HasPrefix(id, prefix) {
			out = append(out, id)
		}
	}
	return out
}

// crossCheck asks event-ruler (infra/eventruler) about every event
// matched so far: its matches must be the test matcher's.
func (m *ruleMatcher) crossCheck(t *testing.T) {
	t.Helper()
	var rules []rulerRule
	for id, p := range m.rules {
		rules = append(rules, rulerRule{Name: id, Pattern: p})
	}
	got := matchWithEventRuler(t, rules, m.events)
	for name, want := range m.answers {
		g := append([]string(nil), got[name]...)
		sort.Strings(g)
		if strings.Join(g, ",") != strings.Join(want, ",") {
			t.Errorf("event-ruler matches %s with %v, the test's matcher with %v", name, g, want)
		}
	}
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
			m := newRuleMatcher(glue, s3)
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
				if m := m.matching("GlueTableChanges", ev); len(m) != 1 {
					t.Errorf("an UpdateTable in %s matches Glue rules %v, want exactly one", db, m)
				}
				for _, key := range []string{"warehouse/" + db + ".db/t/metadata/00003-x.metadata.json", "warehouse/" + db + ".db/t/metadata/00003-x.metadata.json.gz"} {
					if m := m.matching("TableMetadataWritten", s3Event("lakehouse", key)); len(m) != 1 {
						t.Errorf("%s matches S3 rules %v, want exactly one", key, m)
					}
				}
				if m := m.matching("TableMetadataWritten", s3Event("lakehouse", "warehouse/"+db+".db/t/data/x.parquet")); len(m) != 0 {
					t.Errorf("a data file of %s matches S3 rules %v", db, m)
				}
			}
			if m := m.matching("GlueTableChanges", map[string]any{"source": SourceGlue, "detail-type": DetailTypeGlue, "detail": map[string]any{"databaseName": "ungranted", "tableName": "t", "typeOfChange": "UpdateTable"}}); len(m) != 0 {
				t.Errorf("an ungranted database matches Glue rules %v", m)
			}
			if m := m.matching("TableMetadataWritten", s3Event("otherbucket", "warehouse/x.db/t/metadata/1.metadata.json")); len(m) != 0 {
				t.Errorf("another bucket matches S3 rules %v", m)
			}
			ungranted := m.matching("TableMetadataWritten", s3Event("lakehouse", "warehouse/ungranted.db/t/metadata/00001-x.metadata.json"))
			if c.widened != (len(ungranted) > 0) {
				t.Errorf("an ungranted table's metadata file matches S3 rules %v (widened: %v)", ungranted, c.widened)
			}
			// The same answers from event-ruler, the library EventBridge's
			// matching is built on (skipped, loudly, without Java).
			t.Run("event-ruler", m.crossCheck)
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
