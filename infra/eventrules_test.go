package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/icekeeper/icekeeper/events"
	"github.com/icekeeper/icekeeper/shared/optin"
)

// eventRulerEnv names the built event-ruler module (infra/eventruler,
// with target/classes and target/classpath.txt); `make infra-test` builds
// it (make event-ruler) and sets it, so a missing Java or an unbuilt module
// fails there instead of skipping. CI (CI set) fails the same way.
const eventRulerEnv = "ICEKEEPER_EVENT_RULER"

// eventRuler returns the java command's classpath for infra/eventruler's
// Match, or skips (loudly) when neither the Makefile nor CI asked for it
// and Java or the built module is missing.
func eventRuler(t *testing.T) (java, classpath string) {
	t.Helper()
	dir, required := os.Getenv(eventRulerEnv), os.Getenv(eventRulerEnv) != "" || os.Getenv("CI") != ""
	if dir == "" {
		dir = "eventruler"
	}
	missing := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if required {
			t.Fatalf("%s (%s=%q, CI=%q): run `make event-ruler` (needs Java 17 and Maven; see .ci/run)", msg, eventRulerEnv, os.Getenv(eventRulerEnv), os.Getenv("CI"))
		}
		t.Skipf("SKIPPED: %s, so the stack's EventBridge rules were NOT matched against the sample events with event-ruler: run `make event-ruler` (needs Java 17 and Maven) or `make infra-test`, which does", msg)
	}
	java, err := exec.LookPath("java")
	if err != nil {
		missing("no java on PATH")
	}
	deps, err := os.ReadFile(filepath.Join(dir, "target", "classpath.txt"))
	if err != nil {
		missing("infra/eventruler is not built (%v)", err)
	}
	classes, err := filepath.Abs(filepath.Join(dir, "target", "classes"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(classes, "icekeeper", "eventruler", "Match.class")); err != nil {
		missing("infra/eventruler is not built (%v)", err)
	}
	return java, classes + string(os.PathListSeparator) + strings.TrimSpace(string(deps))
}

type rulerRule struct {
	Name    string `json:"name"`
	Pattern any    `json:"pattern"`
}

type rulerEvent struct {
	Name  string         `json:"name"`
	Event map[string]any `json:"event"`
}

// matchWithEventRuler runs infra/eventruler's Match once for every rule
// and event and returns, per event name, the names of the rules
// event-ruler says match it.
func matchWithEventRuler(t *testing.T, rules []rulerRule, evs []rulerEvent) map[string][]string {
	t.Helper()
	java, cp := eventRuler(t)
	in, err := json.Marshal(map[string]any{"rules": rules, "events": evs})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(java, "-cp", cp, "icekeeper.eventruler.Match")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("event-ruler: %v\n%s", err, stderr.String())
	}
	var res struct {
		Matches map[string][]string `json:"matches"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("event-ruler output: %v\n%s", err, out)
	}
	if len(res.Matches) != len(evs) {
		t.Fatalf("event-ruler answered for %d events, want %d", len(res.Matches), len(evs))
	}
	return res.Matches
}

// ruleConstructID is a rule's construct id (GlueTableChanges) from its
// logical id (GlueTableChanges89B03717: the CDK appends a hash).
var ruleConstructID = regexp.MustCompile(`^([A-Za-z]+)[0-9A-F]{8}$`)

// The rules' construct ids (infra/events.go).
const (
	ruleSweep    = "SweepSchedule"
	ruleOrphans  = "OrphanSchedule"
	ruleSummary  = "SummarySchedule"
	ruleCommit   = "CommitEvents"
	ruleContinue = "ContinueEvents"
	ruleQueries  = "QuerySignals"
	ruleAthena   = "AthenaQueries"
	ruleGlue     = "GlueTableChanges"
	ruleS3       = "TableMetadataWritten"
)

// ruleConfig is one synthesized configuration whose rules differ from the
// others', and the catalog the planner would resolve S3 locations in
// (table -> location) for the cross-check with the Go side.
type ruleConfig struct {
	name     string
	ctx      func(t *testing.T) map[string]any
	patterns []string // the construct ids of its event-pattern rules
	bus      string   // eventBus: where the icekeeper events are put
	catalog  map[string]string
}

func eventRuleConfigs() []ruleConfig {
	glue := func(extra map[string]any) func(*testing.T) map[string]any {
		return func(*testing.T) map[string]any {
			ctx := map[string]any{CtxMode: "active", CtxGrants: "demo.*", CtxCatalogWarehouse: "s3://lakehouse/warehouse"}
			for k, v := range extra {
				ctx[k] = v
			}
			return ctx
		}
	}
	demo := map[string]string{"demo.events": "s3://lakehouse/warehouse/demo.db/events"}
	return []ruleConfig{
		// Glue catalog, a namespace grant and a table grant with an
		// explicit location in a second bucket, a custom event bus.
		{name: "glue", ctx: glue(map[string]any{CtxGrants: "demo.*,sales.orders", CtxTableLocations: map[string]any{"sales.orders": "s3://sales-lake/tables/orders"}, CtxEventBus: "icekeeper-bus"}),
			patterns: []string{ruleCommit, ruleContinue, ruleQueries, ruleAthena, ruleGlue, ruleS3}, bus: "icekeeper-bus",
			catalog: map[string]string{"demo.events": "s3://lakehouse/warehouse/demo.db/events", "sales.orders": "s3://sales-lake/tables/orders", "sales.customers": "s3://lakehouse/warehouse/sales.db/customers", "other.t": "s3://lakehouse/warehouse/other.db/t"}},
		// Glue catalog, one table granted by name.
		{name: "tables", ctx: glue(map[string]any{CtxGrants: "sales.orders"}),
			patterns: []string{ruleCommit, ruleContinue, ruleQueries, ruleAthena, ruleGlue, ruleS3}, bus: "default",
			catalog: map[string]string{"demo.events": "s3://lakehouse/warehouse/demo.db/events", "sales.orders": "s3://lakehouse/warehouse/sales.db/orders", "sales.customers": "s3://lakehouse/warehouse/sales.db/customers"}},
		// A REST catalog (not Glue): make deploy-local's context.
		{name: "rest", ctx: func(t *testing.T) map[string]any {
			ctx := localContext(t)
			ctx[CtxArchitecture] = "arm64" // the Makefile's $(LOCAL_CDK_ARCH)
			return ctx
		},
			patterns: []string{ruleCommit, ruleContinue, ruleQueries, ruleAthena, ruleS3}, bus: "default",
			catalog: map[string]string{"demo.events": "s3://warehouse/demo/events"}},
		// An S3 table bucket: no S3 locations the stack can know, no Glue.
		{name: "s3tables", ctx: func(*testing.T) map[string]any { return s3tablesContext() },
			patterns: []string{ruleCommit, ruleContinue, ruleQueries, ruleAthena}, bus: "default",
			catalog: map[string]string{"sales.orders": "s3://0a1b2c3d-orders--table-s3"}},
		// Query signals off.
		{name: "quiet", ctx: glue(map[string]any{CtxQuerySignals: "false"}),
			patterns: []string{ruleCommit, ruleContinue, ruleGlue, ruleS3}, bus: "default", catalog: demo},
		// Mode off: the schedules and the commit rule, wiring only.
		{name: "off", ctx: glue(map[string]any{CtxMode: "off"}),
			patterns: []string{ruleCommit}, bus: "default", catalog: demo},
	}
}

// eventCase is a sample event of events/ or a near miss made from one.
type eventCase struct {
	name string
	// sample is the file in events/ it starts from.
	sample string
	// edit makes the near miss (nil: the sample as it is).
	edit func(ev map[string]any)
	// defaultBus: an icekeeper event put on the default bus instead of
	// the configured eventBus.
	defaultBus bool
}

// set sets a dotted path ("detail.bucket.name") of ev; a nil value
// deletes it.
func set(path string, v any) func(map[string]any) {
	return func(ev map[string]any) {
		keys := strings.Split(path, ".")
		m := ev
		for _, k := range keys[:len(keys)-1] {
			m = m[k].(map[string]any)
		}
		if v == nil {
			delete(m, keys[len(keys)-1])
			return
		}
		m[keys[len(keys)-1]] = v
	}
}

func edits(fs ...func(map[string]any)) func(map[string]any) {
	return func(ev map[string]any) {
		for _, f := range fs {
			f(ev)
		}
	}
}

const (
	sampleAthena   = "athena-query-state-change.json"
	sampleGlueDB   = "glue-database-state-change.json"
	sampleGlue     = "glue-table-state-change.json"
	sampleCommit   = "icekeeper-commit.json"
	sampleContinue = "icekeeper-continue.json"
	sampleQuery    = "icekeeper-query.json"
	sampleOrphans  = "orphan-schedule.json"
	sampleSummary  = "summary-schedule.json"
	sampleWeekly   = "icekeeper-weekly-summary.json"
	sampleS3       = "s3-metadata-object-created.json"
	sampleSchedule = "scheduled.json"
)

func s3Object(bucket, key string) func(map[string]any) {
	return edits(set("detail.bucket.name", bucket), set("detail.object.key", key))
}

// eventCases: every sample in events/ (the test fails on a sample missing
// here) and the near misses.
var eventCases = []eventCase{
	{name: sampleAthena, sample: sampleAthena},
	{name: sampleGlueDB, sample: sampleGlueDB},
	{name: sampleGlue, sample: sampleGlue},
	{name: sampleCommit, sample: sampleCommit},
	{name: sampleContinue, sample: sampleContinue},
	{name: sampleQuery, sample: sampleQuery},
	{name: sampleOrphans, sample: sampleOrphans},
	{name: sampleSummary, sample: sampleSummary},
	{name: sampleWeekly, sample: sampleWeekly},
	{name: sampleS3, sample: sampleS3},
	{name: sampleSchedule, sample: sampleSchedule},

	{name: "glue table: another database", sample: sampleGlue, edit: edits(set("detail.databaseName", "other"), set("detail.tableName", "t"))},
	{name: "glue table: a table granted by name", sample: sampleGlue, edit: edits(set("detail.databaseName", "sales"), set("detail.tableName", "orders"))},
	{name: "glue table: an ungranted table in a table grant's database", sample: sampleGlue, edit: edits(set("detail.databaseName", "sales"), set("detail.tableName", "customers"))},
	{name: "glue table: a partition change", sample: sampleGlue, edit: set("detail.typeOfChange", "CreatePartition")},
	{name: "glue table: the database name in another case", sample: sampleGlue, edit: set("detail.databaseName", "Demo")},
	{name: "glue table: keys outside the pattern", sample: sampleGlue, edit: edits(set("detail.extra", "x"), set("replay-name", "r"))},
	{name: "glue table: another detail-type", sample: sampleGlue, edit: set("detail-type", "Glue Crawler State Change")},
	{name: "glue table: another source", sample: sampleGlue, edit: set("source", "com.example.glue")},
	{name: "glue table: no typeOfChange", sample: sampleGlue, edit: set("detail.typeOfChange", nil)},
	{name: "glue database: a dropped table", sample: sampleGlueDB, edit: set("detail.typeOfChange", "DeleteTable")},
	{name: "glue database: another database's new table", sample: sampleGlueDB, edit: set("detail.databaseName", "other")},

	{name: "s3: a gzip metadata file (.metadata.json.gz)", sample: sampleS3, edit: s3Object("lakehouse", "warehouse/demo.db/events/metadata/00008-x.metadata.json.gz")},
	{name: "s3: a gzip metadata file (.gz.metadata.json)", sample: sampleS3, edit: s3Object("lakehouse", "warehouse/demo.db/events/metadata/00008-x.gz.metadata.json")},
	{name: "s3: a data file", sample: sampleS3, edit: s3Object("lakehouse", "warehouse/demo.db/events/data/00000-0-x.parquet")},
	{name: "s3: another database's prefix", sample: sampleS3, edit: s3Object("lakehouse", "warehouse/other.db/t/metadata/00001-x.metadata.json")},
	{name: "s3: another bucket", sample: sampleS3, edit: set("detail.bucket.name", "elsewhere")},
	{name: "s3: an explicit table location", sample: sampleS3, edit: s3Object("sales-lake", "tables/orders/metadata/00001-x.metadata.json")},
	{name: "s3: an explicit location's key in the other warehouse bucket", sample: sampleS3, edit: s3Object("lakehouse", "tables/orders/metadata/00001-x.metadata.json")},
	{name: "s3: a file in a folder under metadata/", sample: sampleS3, edit: s3Object("lakehouse", "warehouse/demo.db/events/metadata/old/00001-x.metadata.json")},
	{name: "s3: a deeper path under a granted namespace", sample: sampleS3, edit: s3Object("lakehouse", "warehouse/demo.db/events/extra/metadata/00001-x.metadata.json")},
	{name: "s3: a temporary file beside the metadata", sample: sampleS3, edit: s3Object("lakehouse", "warehouse/demo.db/events/metadata/00008-x.metadata.json.tmp")},
	{name: "s3: another detail-type", sample: sampleS3, edit: set("detail-type", "Object Deleted")},
	{name: "s3: the REST warehouse's metadata", sample: sampleS3, edit: s3Object("warehouse", "demo/events/metadata/00001-x.metadata.json")},
	{name: "s3: a table granted by name", sample: sampleS3, edit: s3Object("lakehouse", "warehouse/sales.db/orders/metadata/00001-x.metadata.json")},
	{name: "s3: an ungranted sibling of a table granted by name", sample: sampleS3, edit: s3Object("lakehouse", "warehouse/sales.db/customers/metadata/00001-x.metadata.json")},

	{name: "commit: an ungranted table", sample: sampleCommit, edit: set("detail.namespace", "other")},
	{name: "commit: on the default bus", sample: sampleCommit, defaultBus: true},
	{name: "commit: another detail-type", sample: sampleCommit, edit: set("detail-type", "Iceberg Table Created")},
	{name: "commit: another source", sample: sampleCommit, edit: set("source", "com.example.writer")},
	{name: "query: an ungranted table", sample: sampleQuery, edit: set("detail.namespace", "other")},

	{name: "athena: another workgroup", sample: sampleAthena, edit: set("detail.workgroupName", "adhoc")},
	{name: "athena: a failed query", sample: sampleAthena, edit: set("detail.currentState", "FAILED")},
	{name: "athena: a DDL statement", sample: sampleAthena, edit: set("detail.statementType", "DDL")},
}

// wantMatches is the spec: for each event, the rules that must match it
// in each configuration ("" none), in the order glue, tables, rest,
// s3tables, quiet, off. Derived from what each rule is for
// (infra/events.go), not from a run of the matcher.
var wantMatches = map[string][6]string{
	// Samples. A Glue event wakes the Glue rule where the catalog is
	// Glue and its database is granted; the S3 sample's location is a
	// demo table's under s3://lakehouse/warehouse; the icekeeper events
	// wake their rule wherever it exists; schedules match no pattern.
	sampleAthena:   {ruleAthena, ruleAthena, ruleAthena, ruleAthena, "", ""},
	sampleGlueDB:   {ruleGlue, "", "", "", ruleGlue, ""},
	sampleGlue:     {ruleGlue, "", "", "", ruleGlue, ""},
	sampleCommit:   {ruleCommit, ruleCommit, ruleCommit, ruleCommit, ruleCommit, ruleCommit},
	sampleContinue: {ruleContinue, ruleContinue, ruleContinue, ruleContinue, ruleContinue, ""},
	sampleQuery:    {ruleQueries, ruleQueries, ruleQueries, ruleQueries, "", ""},
	sampleOrphans:  {},
	sampleSummary:  {},
	// The summary's own event wakes no rule of the stack: it is for the
	// operator's (README, "The weekly summary").
	sampleWeekly:   {},
	sampleS3:       {ruleS3, "", "", "", ruleS3, ""},
	sampleSchedule: {},

	// Glue: filtered on the databases of the grants and on UpdateTable
	// and CreateTable; EventBridge is case-sensitive and ignores event
	// keys the pattern does not name (EventBridge User Guide, "Event
	// patterns").
	"glue table: another database":                               {},
	"glue table: a table granted by name":                        {ruleGlue, ruleGlue, "", "", "", ""},
	"glue table: an ungranted table in a table grant's database": {ruleGlue, ruleGlue, "", "", "", ""},
	"glue table: a partition change":                             {},
	"glue table: the database name in another case":              {},
	"glue table: keys outside the pattern":                       {ruleGlue, "", "", "", ruleGlue, ""},
	"glue table: another detail-type":                            {},
	"glue table: another source":                                 {},
	"glue table: no typeOfChange":                                {},
	"glue database: a dropped table":                             {},
	"glue database: another database's new table":                {},

	// S3: the buckets of the granted locations, and keys
	// <location>/metadata/*.metadata.json(.gz); a wildcard's * matches any
	// characters, slashes included (EventBridge User Guide, "Wildcard
	// matching"; event-ruler README, "Wildcard matching"); bucket and key
	// are matched independently.
	"s3: a gzip metadata file (.metadata.json.gz)": {ruleS3, "", "", "", ruleS3, ""},
	"s3: a gzip metadata file (.gz.metadata.json)": {ruleS3, "", "", "", ruleS3, ""},
	"s3: a data file":                {},
	"s3: another database's prefix":  {},
	"s3: another bucket":             {},
	"s3: an explicit table location": {ruleS3, "", "", "", "", ""},
	"s3: an explicit location's key in the other warehouse bucket": {ruleS3, "", "", "", "", ""},
	"s3: a file in a folder under metadata/":                       {ruleS3, "", "", "", ruleS3, ""},
	"s3: a deeper path under a granted namespace":                  {ruleS3, "", "", "", ruleS3, ""},
	"s3: a temporary file beside the metadata":                     {},
	"s3: another detail-type":                                      {},
	"s3: the REST warehouse's metadata":                            {"", "", ruleS3, "", "", ""},
	"s3: a table granted by name":                                  {"", ruleS3, "", "", "", ""},
	"s3: an ungranted sibling of a table granted by name":          {},

	// The icekeeper events: source and detail-type only, on eventBus
	// (a rule matches only the events of its own bus).
	"commit: an ungranted table":  {ruleCommit, ruleCommit, ruleCommit, ruleCommit, ruleCommit, ruleCommit},
	"commit: on the default bus":  {"", ruleCommit, ruleCommit, ruleCommit, ruleCommit, ruleCommit},
	"commit: another detail-type": {},
	"commit: another source":      {},
	"query: an ungranted table":   {ruleQueries, ruleQueries, ruleQueries, ruleQueries, "", ""},

	// Athena: succeeded DML queries of the configured workgroups.
	"athena: another workgroup": {},
	"athena: a failed query":    {},
	"athena: a DDL statement":   {},
}

// knownDisagreements are the (configuration, event) pairs where the rules
// and the planner's own filtering (package events, the grants, the
// location lookup) disagree, with why that is accepted. "over": a rule
// delivers an event the planner then ignores (an invocation spent);
// "under": the planner would act on an event no rule delivers. Mode off
// is left out (the planner acts on nothing there), and so are the
// schedules (their rules have no pattern).
var knownDisagreements = []struct {
	why   string
	pairs []string
}{
	{"over: the icekeeper-bus rules match source and detail-type only; the planner checks the grant (and counts the skip)", []string{
		"tables/" + sampleCommit, "tables/" + sampleContinue, "tables/" + sampleQuery,
		"s3tables/" + sampleCommit, "s3tables/" + sampleContinue, "s3tables/" + sampleQuery,
		"glue/commit: an ungranted table", "tables/commit: an ungranted table", "rest/commit: an ungranted table", "s3tables/commit: an ungranted table", "quiet/commit: an ungranted table",
		"tables/commit: on the default bus", "s3tables/commit: on the default bus",
		"glue/query: an ungranted table", "tables/query: an ungranted table", "rest/query: an ungranted table", "s3tables/query: an ungranted table",
	}},
	{"over: the Glue rule filters on databases (Glue's events name one database); a table grant's database wakes the planner for its other tables too", []string{
		"glue/glue table: an ungranted table in a table grant's database", "tables/glue table: an ungranted table in a table grant's database",
	}},
	{"over: the S3 rule matches buckets and keys independently (infra/README.md)", []string{
		"glue/s3: an explicit location's key in the other warehouse bucket",
	}},
	{"over: a wildcard's * spans slashes, so a key below <location>/metadata/ or a deeper table path matches; the planner rejects or cannot resolve it", []string{
		"glue/s3: a file in a folder under metadata/", "quiet/s3: a file in a folder under metadata/",
		"glue/s3: a deeper path under a granted namespace", "quiet/s3: a deeper path under a granted namespace",
	}},
	{"under: the icekeeper rules listen on eventBus only; an event put on another bus is not icekeeper's", []string{
		"glue/commit: on the default bus",
	}},
	{"under: the Athena rule is the workgroup filter (the planner's GetQueryExecution is allowed in those workgroups only)", []string{
		"glue/athena: another workgroup", "tables/athena: another workgroup", "rest/athena: another workgroup", "s3tables/athena: another workgroup", "quiet/athena: another workgroup",
	}},
	{"under: querySignals=false leaves the query rules out; the planner itself is not told the setting", []string{
		"quiet/" + sampleAthena, "quiet/" + sampleQuery,
	}},
	{"under: a catalog other than Glue (REST, an S3 table bucket) gets no Glue rule; Glue's events are about the Glue catalog's tables, not that catalog's tables of the same name", []string{
		"rest/" + sampleGlueDB, "rest/" + sampleGlue, "rest/glue table: keys outside the pattern",
		"s3tables/glue table: a table granted by name",
	}},
}

// plannerActs is the Go side's verdict on an event in a configuration:
// it decodes (events.Decode), needs work (not Ignored), names a granted
// table or a location the catalog resolves to one (as Dispatcher.resolve
// does), or is an Athena query to look up. considered is false for the
// schedules, which no pattern delivers.
func plannerActs(t *testing.T, c ruleConfig, grants optin.Grants, raw []byte) (acts, considered bool) {
	t.Helper()
	trig, err := events.Decode(raw)
	switch {
	case err != nil:
		return false, true
	case trig.Sweep:
		return false, false
	case trig.Ignored != "":
		return false, true
	case trig.AthenaQueryID != "":
		return true, true
	}
	for _, name := range trig.Tables {
		if grants.Granted(name) {
			return true, true
		}
	}
	for _, loc := range trig.Locations {
		for name, at := range c.catalog {
			if at == loc && grants.Granted(name) {
				return true, true
			}
		}
	}
	return false, true
}

// TestEventRules_MatchExactlyTheExpectedEventsWithEventRuler: every
// EventBridge rule of each configuration whose rules differ, matched by
// event-ruler (the Java library EventBridge's matching is built on,
// https://github.com/aws/event-ruler) against every sample event of
// events/ and near misses, matches exactly wantMatches; the schedule rules
// exist with a schedule and no pattern; each pattern is within
// EventBridge's default size quota; and where the rules and the
// planner's own filtering disagree, the disagreement is a known one.
func TestEventRules_MatchExactlyTheExpectedEventsWithEventRuler(t *testing.T) {
	eventRuler(t) // skip (or fail) before synthesizing anything
	samples, err := filepath.Glob(filepath.Join("..", "events", "*.json"))
	if err != nil || len(samples) == 0 {
		t.Fatalf("no sample events (%v)", err)
	}
	raw := map[string][]byte{}
	for _, s := range samples {
		raw[filepath.Base(s)] = mustReadFile(t, s)
	}
	for name := range raw {
		if _, ok := wantMatches[name]; !ok {
			t.Errorf("sample event %s has no row in wantMatches", name)
		}
	}
	cases := map[string]eventCase{}
	for _, c := range eventCases {
		if _, ok := wantMatches[c.name]; !ok {
			t.Errorf("event %q has no row in wantMatches", c.name)
		}
		if _, ok := raw[c.sample]; !ok {
			t.Errorf("event %q: no sample %s", c.name, c.sample)
		}
		cases[c.name] = c
	}
	for name := range wantMatches {
		if _, ok := cases[name]; !ok {
			t.Errorf("wantMatches row %q is no event", name)
		}
	}
	known := map[string]string{}
	for _, k := range knownDisagreements {
		for _, p := range k.pairs {
			known[p] = k.why
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	type ruleInfo struct{ config, id, bus string }
	configs := eventRuleConfigs()
	var rules []rulerRule
	ruleOf := map[string]ruleInfo{}
	var evs []rulerEvent
	eventBus := map[string]string{}
	eventJSON := map[string][]byte{}
	for _, c := range configs {
		f := mustSynth(t, c.ctx(t))
		var patterns, schedules []string
		for logical, r := range f.ofType("AWS::Events::Rule") {
			m := ruleConstructID.FindStringSubmatch(logical)
			if m == nil {
				t.Fatalf("%s: rule %s: not a construct id and a hash", c.name, logical)
			}
			p := props(r)
			bus := "default"
			if b, ok := p["EventBusName"]; ok {
				s, ok := b.(string)
				if !ok {
					t.Fatalf("%s: rule %s: EventBusName %v is not a name", c.name, logical, b)
				}
				bus = s
			}
			switch {
			case p["EventPattern"] != nil && p["ScheduleExpression"] == nil:
				// EventBridge's default quota on an event pattern's
				// size: 2,048 characters (adjustable; EventBridge User
				// Guide, "Amazon EventBridge quotas", Event pattern size).
				if b, err := json.Marshal(p["EventPattern"]); err != nil || len(b) > EventPatternLimit {
					t.Errorf("%s: rule %s: event pattern of %d characters, EventBridge's default quota is %d (%v)", c.name, logical, len(b), EventPatternLimit, err)
				}
				patterns = append(patterns, m[1])
				name := c.name + "/" + m[1]
				rules = append(rules, rulerRule{Name: name, Pattern: p["EventPattern"]})
				ruleOf[name] = ruleInfo{c.name, m[1], bus}
			case p["ScheduleExpression"] != nil && p["EventPattern"] == nil:
				schedules = append(schedules, m[1])
			default:
				t.Errorf("%s: rule %s has both or neither of a pattern and a schedule", c.name, logical)
			}
		}
		sort.Strings(patterns)
		sort.Strings(schedules)
		if want := slices.Sorted(slices.Values(c.patterns)); !slices.Equal(patterns, want) {
			t.Errorf("%s: event-pattern rules %v, want %v", c.name, patterns, want)
		}
		if want := []string{ruleOrphans, ruleSummary, ruleSweep}; !slices.Equal(schedules, want) {
			t.Errorf("%s: schedule rules %v, want %v", c.name, schedules, want)
		}
		for _, ec := range eventCases {
			var ev map[string]any
			if err := json.Unmarshal(raw[ec.sample], &ev); err != nil {
				t.Fatalf("%s: %v", ec.sample, err)
			}
			if ec.edit != nil {
				ec.edit(ev)
			}
			// AWS services put their events on the default bus;
			// icekeeper's are put on eventBus.
			bus := "default"
			if ev["source"] == SourceCommit && !ec.defaultBus {
				bus = c.bus
			}
			name := c.name + "/" + ec.name
			evs = append(evs, rulerEvent{Name: name, Event: ev})
			eventBus[name] = bus
			b, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			eventJSON[name] = b
		}
	}

	got := matchWithEventRuler(t, rules, evs)
	visited := map[string]bool{}
	for ci, c := range configs {
		grants, err := optin.ParseGrants(fmt.Sprint(c.ctx(t)[CtxGrants]))
		if err != nil {
			t.Fatal(err)
		}
		for _, ec := range eventCases {
			name := c.name + "/" + ec.name
			var matched []string
			for _, r := range got[name] {
				info := ruleOf[r]
				// A rule matches only the events of the bus it is
				// associated with (EventBridge User Guide, "Rules in
				// Amazon EventBridge"); event-ruler matches patterns only.
				if info.config == c.name && info.bus == eventBus[name] {
					matched = append(matched, info.id)
				}
			}
			if g, w := strings.Join(matched, " "), wantMatches[ec.name][ci]; g != w {
				t.Errorf("%s: %q matched %q, want %q", c.name, ec.name, g, w)
			}
			if c.name == "off" {
				continue
			}
			visited[name] = true
			acts, considered := plannerActs(t, c, grants, eventJSON[name])
			if !considered || acts == (len(matched) > 0) {
				if why, ok := known[name]; ok {
					t.Errorf("%s: %q: listed as a known disagreement (%s), but the rules and the planner agree", c.name, ec.name, why)
				}
				continue
			}
			why, ok := known[name]
			switch {
			case !ok && acts:
				t.Errorf("%s: %q: the planner would act on it, but no rule delivers it", c.name, ec.name)
			case !ok:
				t.Errorf("%s: %q: rule %v delivers it, but the planner does nothing with it", c.name, ec.name, matched)
			case acts && !strings.HasPrefix(why, "under:"), !acts && !strings.HasPrefix(why, "over:"):
				t.Errorf("%s: %q: listed as %q, but it is the other way round", c.name, ec.name, why)
			}
		}
	}
	for p := range known {
		if !visited[p] {
			t.Errorf("known disagreement %q is no configuration's event (mode off is not cross-checked)", p)
		}
	}
}

// TestEventRules_ReadmeNamesThePinnedEventRuler: infra/README.md, the
// root README and localstack/README.md name the event-ruler version
// infra/eventruler/pom.xml pins.
func TestEventRules_ReadmeNamesThePinnedEventRuler(t *testing.T) {
	m := regexp.MustCompile(`<eventruler\.version>([^<]+)</eventruler\.version>`).FindSubmatch(mustReadFile(t, filepath.Join("eventruler", "pom.xml")))
	if m == nil {
		t.Fatal("infra/eventruler/pom.xml pins no eventruler.version")
	}
	for _, readme := range []string{"README.md", filepath.Join("..", "README.md"), filepath.Join("..", "localstack", "README.md")} {
		if !bytes.Contains(mustReadFile(t, readme), []byte("event-ruler "+string(m[1]))) && !bytes.Contains(mustReadFile(t, readme), []byte("event-ruler) `"+string(m[1])+"`")) {
			t.Errorf("%s does not name event-ruler %s, the version infra/eventruler/pom.xml pins", readme, m[1])
		}
	}
}
