package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/blob"
	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/fingerprint"
	"github.com/icekeeper/icekeeper/shared/harness/localcloud"
	"github.com/icekeeper/icekeeper/shared/harness/localrun"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/harness/stages"
	"github.com/icekeeper/icekeeper/shared/health"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/ledger"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/summary"
)

func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, &out, &errOut)
	if err != nil {
		t.Logf("stderr: %s", errOut.String())
	}
	return out.String(), err
}

func exitCode(err error) int {
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if err != nil {
		return 1
	}
	return 0
}

func TestDemo_CompactsEverySampleTableAndKeepsEveryRow(t *testing.T) {
	out, err := runCLI(t, "demo", "--json")
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	var reports []demoReport
	if err := json.Unmarshal([]byte(out), &reports); err != nil {
		t.Fatalf("demo --json: %v\n%s", err, out)
	}
	if len(reports) != len(demoTables) {
		t.Fatalf("%d reports, want %d", len(reports), len(demoTables))
	}
	for _, r := range reports {
		if len(r.Failures) > 0 || !r.Fingerprint || !r.Cycle.Committed {
			t.Fatalf("%s: %+v", r.Table, r)
		}
		switch {
		case r.DeleteRewrite:
			// Equality deletes converted: same data files, none left.
			if r.Before.EqualityDeleteFiles == 0 || r.After.EqualityDeleteFiles != 0 || r.After.DataFiles != r.Before.DataFiles {
				t.Fatalf("%s: delete-file rewrite: %+v -> %+v", r.Table, r.Before, r.After)
			}
		case r.Before.DeleteFiles() == 0 || r.After.DataFiles >= r.Before.DataFiles:
			t.Fatalf("%s: nothing to show: %+v -> %+v", r.Table, r.Before, r.After)
		}
		if !r.Expiry.Committed || r.SnapshotsAfter != 1 || r.StorageAfter >= r.StorageBefore || !r.ExpiryFingerprint {
			t.Fatalf("%s: expiry: %+v", r.Table, r)
		}
	}
}

func TestDemoChecks_FlagEveryFailure(t *testing.T) {
	r := demoReport{Before: statsOf(10, 2), After: statsOf(10, 1)}
	got := demoChecks(r)
	if len(got) != 7 {
		t.Fatalf("checks %v, want 7 failures (not committed, rows changed, files not reduced, deletes left; expiry not committed, snapshots and storage not reduced, rows changed by it)", got)
	}
}

func TestCompact_LocalRunsOneCycleOnALocalCatalog(t *testing.T) {
	cat, uri, wh := localSQLCatalog(t, "")
	ident := table.Identifier{"shop", "orders"}
	tbl, err := sampletable.Create(context.Background(), cat, ident, sampletable.Options{FormatVersion: 2, Partitions: 2, Files: 6, RowsPerFile: 50, PositionDeletes: true})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := fingerprint.Table(context.Background(), tbl)

	out, err := runCLI(t, "compact", "shop.orders", "--local", "--json", "--catalog", "sql", "--catalog-name", "local", "--uri", uri, "--warehouse", wh)
	if err != nil {
		t.Fatalf("compact: %v\n%s", err, out)
	}
	var c localrun.Cycle
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("compact --json: %v\n%s", err, out)
	}
	if !c.Committed || c.Plan.Groups != 2 {
		t.Fatalf("cycle %+v", c)
	}
	after, err := cat.LoadTable(context.Background(), ident)
	if err != nil {
		t.Fatal(err)
	}
	if after.CurrentSnapshot().SnapshotID != c.Job.CommittedSnapshotID {
		t.Fatalf("table at %d, job says %d", after.CurrentSnapshot().SnapshotID, c.Job.CommittedSnapshotID)
	}
	if fp, _ := fingerprint.Table(context.Background(), after); fp != before {
		t.Fatalf("rows changed: %s -> %s", before, fp)
	}
}

// TestCompact_SaysWhatItLeftForTheNextJob: a table larger than one job
// (ICEKEEPER_MAX_JOB_FILES) is compacted a job per run, each run saying
// what it left, until nothing is.
func TestCompact_SaysWhatItLeftForTheNextJob(t *testing.T) {
	cat, uri, wh := localSQLCatalog(t, "")
	ident := table.Identifier{"shop", "orders"}
	if _, err := sampletable.Create(context.Background(), cat, ident, sampletable.Options{FormatVersion: 2, Partitions: 2, Files: 6, RowsPerFile: 50}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ICEKEEPER_MAX_JOB_FILES", "6")
	compact := func() string {
		out, err := runCLI(t, "compact", "shop.orders", "--local", "-q", "--catalog", "sql", "--catalog-name", "local", "--uri", uri, "--warehouse", wh)
		if err != nil {
			t.Fatalf("compact: %v\n%s", err, out)
		}
		return out
	}
	if out := compact(); !strings.Contains(out, "left for the next job: 1 group,") || !strings.Contains(out, "committed") {
		t.Fatalf("first run:\n%s", out)
	}
	if out := compact(); strings.Contains(out, "left for the next job") || !strings.Contains(out, "committed") {
		t.Fatalf("second run:\n%s", out)
	}
}

// TestCompact_SortRewritesOverlappingFilesSorted: compact --sort on a
// table whose appends repeat the same ids plans a sort compaction (the
// table's strategy property is unset) and leaves files whose id ranges do
// not overlap.
func TestCompact_SortRewritesOverlappingFilesSorted(t *testing.T) {
	ctx := context.Background()
	cat, uri, wh := localSQLCatalog(t, "")
	ident := table.Identifier{"shop", "orders"}
	tbl, err := sampletable.Create(ctx, cat, ident, sampletable.Options{FormatVersion: 2, Partitions: 1, Files: 1, RowsPerFile: 200})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if tbl, err = sampletable.AppendRows(ctx, tbl, 0, 1, 200); err != nil {
			t.Fatal(err)
		}
	}
	if tbl, err = sampletable.SortBy(ctx, tbl, "id"); err != nil {
		t.Fatal(err)
	}
	before, _ := fingerprint.Table(ctx, tbl)

	out, err := runCLI(t, "compact", "shop.orders", "--sort", "--local", "--json", "-q", "--catalog", "sql", "--catalog-name", "local", "--uri", uri, "--warehouse", wh)
	if err != nil {
		t.Fatalf("compact --sort: %v\n%s", err, out)
	}
	var c localrun.Cycle
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("compact --json: %v\n%s", err, out)
	}
	if !c.Committed || c.Plan.Strategy != optin.StrategySort || c.Plan.InputFiles != 6 {
		t.Fatalf("cycle %+v, want a committed sort of the 6 files", c.Plan)
	}

	after, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if fp, _ := fingerprint.Table(ctx, after); fp != before {
		t.Fatalf("rows changed: %s -> %s", before, fp)
	}
	live, err := after.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range live {
		_, recs, err := after.Scan(table.WithSelectedFields("id")).ReadTasks(ctx, []table.FileScanTask{task})
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for rec, err := range recs {
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, rec.Column(0).(*array.Int64).Int64Values()...)
			rec.Release()
		}
		if !slices.IsSorted(ids) {
			t.Fatalf("%s is not sorted by id", task.File.FilePath())
		}
	}
	th, err := health.ThresholdsFor(after.Properties(), 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := health.Assess(ctx, after, time.Now(), th)
	if err != nil {
		t.Fatal(err)
	}
	for _, col := range r.Columns {
		// Each id is in the table six times, so sorted files may touch
		// where one repeats across a file boundary: depth 2 at most.
		if col.Column == "id" && col.OverlapDepth > 2 {
			t.Fatalf("id overlap depth %d after a sort compaction", col.OverlapDepth)
		}
	}
	if _, ok := r.Recommends(health.ActionSort); ok {
		t.Fatal("a sort is still recommended after the sort compaction")
	}
}

// TestCompact_ALayoutThatCannotBeIsAUsageError: --sort with --z-order,
// or a z-order of one column, is refused before anything runs.
func TestCompact_ALayoutThatCannotBeIsAUsageError(t *testing.T) {
	for want, args := range map[string][]string{
		"choose one layout": {"compact", "shop.orders", "--sort", "--z-order", "id,amount", "--local"},
		"want 2 to 8":       {"compact", "shop.orders", "--z-order", "id", "--local"},
	} {
		if _, err := runCLI(t, args...); exitCode(err) != 2 || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: exit %d (%v), want 2 and %q", args, exitCode(err), err, want)
		}
	}
}

// TestInvoke_EachStageByHandWithACommitBetween runs the planner on the
// sample Glue event, the rewriters and the committer one by one against a
// local cloud, and appends to the table between the rewriters and the
// committer, as an operator could.
func TestInvoke_EachStageByHandWithACommitBetween(t *testing.T) {
	ctx := context.Background()
	cloud := localcloud.Start()
	defer cloud.Close()
	res, err := cloud.Provision(ctx, "cli", "", 3)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := config.Defaults()
	cfg.Catalog = catalogs.Config{Type: "sql", Name: "cli", URI: "file:" + filepath.Join(dir, "cat.db"), Warehouse: "file://" + filepath.Join(dir, "wh")}
	cfg.Mode, cfg.Grants = config.ModeActive, "demo"
	res.Apply(&cfg)
	for k, v := range cfg.Env() {
		t.Setenv(k, v)
	}
	for k, v := range map[string]string{"AWS_ENDPOINT_URL": cloud.URL, "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"} {
		t.Setenv(k, v)
	}
	cat, err := stages.OpenCatalog(ctx, cfg, cloud.Clients)
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"demo", "events"} // the table the sample Glue event names
	tbl, err := sampletable.Create(ctx, cat, ident, sampletable.Options{FormatVersion: 3, Partitions: 1, Files: 6, RowsPerFile: 50, PositionDeletes: true,
		Properties: map[string]string{optin.PropertyEnabled: "true"}})
	if err != nil {
		t.Fatal(err)
	}

	out, err := runCLI(t, "invoke", "planner", "--event", "../../events/glue-table-state-change.json", "-q")
	if err != nil {
		t.Fatalf("invoke planner: %v\n%s", err, out)
	}
	if !strings.Contains(out, `"action": "planned"`) {
		t.Fatalf("planner output %s", out)
	}
	if out, err = runCLI(t, "invoke", "rewriter", "-q"); err != nil || !strings.Contains(out, `"delivered": 1`) {
		t.Fatalf("invoke rewriter: %v\n%s", err, out)
	}
	if _, err := sampletable.AppendRows(ctx, tbl, 1_000_000, 1, 10); err != nil {
		t.Fatal(err)
	}
	cur, _ := cat.LoadTable(ctx, ident)
	want, _ := fingerprint.Table(ctx, cur)
	if out, err = runCLI(t, "invoke", "committer", "-q"); err != nil {
		t.Fatalf("invoke committer: %v\n%s", err, out)
	}
	after, _ := cat.LoadTable(ctx, ident)
	if got, _ := fingerprint.Table(ctx, after); got != want {
		t.Fatalf("rows %s, want %s", got, want)
	}
	js, _ := stagesJobs(t, cfg, cloud)
	if js.State != jobs.Committed {
		t.Fatalf("job %s (%s)", js.State, js.Reason)
	}
	if out, err = runCLI(t, "log", "demo.events"); err != nil || !strings.Contains(out, js.ID) || !strings.Contains(out, "committed") || !strings.Contains(out, "compaction") {
		t.Fatalf("icekeeper log: %v\n%s", err, out)
	}
	// The ledger: this week, one job with its cost, no query signals.
	if !strings.Contains(out, "ledger of demo.events") || !strings.Contains(out, "(in progress)") || !strings.Contains(out, "not backed off: no query signals") {
		t.Fatalf("icekeeper log shows no ledger:\n%s", out)
	}
	if out, err = runCLI(t, "log", "demo.events", "--ledger", "--json"); err != nil {
		t.Fatalf("icekeeper log --ledger --json: %v\n%s", err, out)
	}
	var book ledger.Assessment
	if err := json.Unmarshal([]byte(out), &book); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(book.Weeks) != 1 || book.Weeks[0].Jobs != 1 || book.Weeks[0].CostUSD <= 0 || book.Verdict.BackOff {
		t.Fatalf("ledger %+v", book)
	}

	// The weekly summary of this week (built as at the next Monday
	// 06:00): the one compaction, committed, with its cost.
	now := time.Now().UTC()
	nextMonday := time.Date(now.Year(), now.Month(), now.Day(), 6, 0, 0, 0, time.UTC).AddDate(0, 0, 7-(int(now.Weekday())+6)%7)
	if out, err = runCLI(t, "summary", "--at", nextMonday.Format(time.RFC3339), "--json"); err != nil {
		t.Fatalf("icekeeper summary: %v\n%s", err, out)
	}
	var week summary.Summary
	if err := json.Unmarshal([]byte(out), &week); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if week.Totals.Tables != 1 || week.Totals.Jobs != 1 || week.Totals.Committed != 1 || week.Totals.CostUSD <= 0 ||
		len(week.Tables) != 1 || week.Tables[0].Table != "demo.events" || len(week.Tables[0].Actions) != 1 || week.Tables[0].Actions[0].Kind != "compaction" {
		t.Fatalf("summary %+v", week)
	}
	// The planner on the weekly rule's event writes last week's to the
	// bucket with the stack's wiring.
	if out, err = runCLI(t, "invoke", "planner", "--event", "../../events/summary-schedule.json", "-q"); err != nil || !strings.Contains(out, `"action": "summarized"`) {
		t.Fatalf("invoke planner (summary): %v\n%s", err, out)
	}
	store, err := blob.NewStore(cloud.Clients.S3, cfg.Bucket, cfg.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	b, err := store.Get(ctx, store.Key(summary.LatestJSON))
	if err != nil {
		t.Fatal(err)
	}
	var last summary.Summary
	if err := json.Unmarshal(b, &last); err != nil || last.Totals.Tables != 1 || !last.To.Equal(nextMonday.Add(-6*time.Hour).AddDate(0, 0, -7)) {
		t.Fatalf("the planner's summary %+v (%v)", last, err)
	}
}

func TestCLI_BadInputGetsAClearErrorAndUsageCode(t *testing.T) {
	for _, args := range [][]string{
		{"nonsense"},
		{"compact"},
		{"compact", "not-a-table", "--local"},
		{"invoke"},
		{"invoke", "planner"},
		{"invoke", "janitor"},
		{"signals"},
		{"signals", "shop.orders", "--days", "0"},
		{"demo", "--no-such-flag"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			_, err := runCLI(t, args...)
			if exitCode(err) != 2 {
				t.Fatalf("exit code %d (%v), want 2", exitCode(err), err)
			}
		})
	}
	if out, err := runCLI(t, "help"); err != nil || !strings.Contains(out, "icekeeper demo") {
		t.Fatalf("help: %v %s", err, out)
	}
}

// TestCLI_HelpExitsZeroAndListsOnlyTheCommandsFlags: --help on every
// command answers with its usage and exit code 0; invoke's functions list
// only their own flags.
func TestCLI_HelpExitsZeroAndListsOnlyTheCommandsFlags(t *testing.T) {
	for _, args := range [][]string{
		{"demo", "--help"}, {"compact", "--help"}, {"health", "-h"}, {"log", "--help"}, {"signals", "--help"},
		{"local-cloud", "--help"}, {"invoke", "--help"}, {"invoke", "planner", "--help"},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), args, &out, &errOut)
		if !errors.Is(err, errHelp) {
			t.Errorf("%v: %v, want help (exit 0)", args, err)
		}
		if out.Len()+errOut.Len() == 0 {
			t.Errorf("%v printed no usage", args)
		}
	}
	var out, errOut bytes.Buffer
	_ = run(context.Background(), []string{"invoke", "rewriter", "--help"}, &out, &errOut)
	if u := errOut.String(); strings.Contains(u, "-event") || strings.Contains(u, "-catalog") || !strings.Contains(u, "-max") {
		t.Errorf("invoke rewriter --help lists other functions' flags:\n%s", u)
	}
}

// TestCLI_FlagErrorsArePrintedOnce: the flag package prints a flag error
// with the usage; the command does not print it again.
func TestCLI_FlagErrorsArePrintedOnce(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"demo", "--no-such-flag"}, &out, &errOut)
	var ee exitError
	if !errors.As(err, &ee) || ee.code != 2 || !ee.reported {
		t.Fatalf("err %v, want a reported usage error (2)", err)
	}
	if n := strings.Count(errOut.String(), "no-such-flag"); n != 1 {
		t.Fatalf("the flag error appears %d times in:\n%s", n, errOut.String())
	}
}

// TestCLI_AcceptsIcebergGosFlagValues: --output json means --json, and
// --sql-driver sqliteshim (iceberg-go's CLI's name) opens the sqlite catalog.
func TestCLI_AcceptsIcebergGosFlagValues(t *testing.T) {
	cat, uri, wh := localSQLCatalog(t, "sqliteshim")
	if _, err := sampletable.Create(context.Background(), cat, table.Identifier{"shop", "orders"}, sampletable.Options{FormatVersion: 2, Partitions: 1, Files: 6, RowsPerFile: 20}); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI(t, "health", "shop.orders", "--output", "json", "--catalog", "sql", "--sql-driver", "sqliteshim", "--catalog-name", "local", "--uri", uri, "--warehouse", wh)
	if err != nil {
		t.Fatalf("health --output json: %v\n%s", err, out)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("--output json printed no JSON: %v\n%s", err, out)
	}
	if _, err := runCLI(t, "health", "shop.orders", "--output", "yaml"); exitCode(err) != 2 {
		t.Fatalf("--output yaml: exit %d, want 2", exitCode(err))
	}
}

// TestDemo_KeepPrintsCommandsThatWork: with --keep, the demo ends with the
// exact commands to go on with its tables, and they run.
func TestDemo_KeepPrintsCommandsThatWork(t *testing.T) {
	out, err := runCLI(t, "demo", "--keep", t.TempDir())
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	ran := 0
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "icekeeper health ") {
			continue
		}
		args := strings.Fields(strings.TrimPrefix(line, "icekeeper "))
		if got, err := runCLI(t, args...); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, got)
		}
		ran++
	}
	if ran != len(demoTables) {
		t.Fatalf("ran %d printed health commands, want %d:\n%s", ran, len(demoTables), out)
	}
}

// TestCompact_ExitCodesSayWhatHappened: a compacted table gives 0, the same
// table again (nothing worth rewriting) 3, as documented.
func TestCompact_ExitCodesSayWhatHappened(t *testing.T) {
	cat, uri, wh := localSQLCatalog(t, "")
	if _, err := sampletable.Create(context.Background(), cat, table.Identifier{"shop", "orders"}, sampletable.Options{FormatVersion: 2, Partitions: 1, Files: 6, RowsPerFile: 20}); err != nil {
		t.Fatal(err)
	}
	args := []string{"compact", "shop.orders", "--local", "--catalog", "sql", "--catalog-name", "local", "--uri", uri, "--warehouse", wh}
	if _, err := runCLI(t, args...); exitCode(err) != exitDone {
		t.Fatalf("first compact: exit %d (%v), want %d", exitCode(err), err, exitDone)
	}
	if _, err := runCLI(t, args...); exitCode(err) != exitNothingToDo {
		t.Fatalf("second compact: exit %d (%v), want %d (nothing to do)", exitCode(err), err, exitNothingToDo)
	}
}

// TestSample_MakesATableThatCompacts: `sample` creates an uncompacted table
// in the configured catalog, which `compact --local` then compacts.
func TestSample_MakesATableThatCompacts(t *testing.T) {
	dir := t.TempDir()
	flags := []string{"--catalog", "sql", "--catalog-name", "local", "--uri", "file:" + filepath.Join(dir, "cat.db"), "--warehouse", "file://" + filepath.Join(dir, "wh")}
	out, err := runCLI(t, append([]string{"sample", "shop.orders", "--format-version", "3"}, flags...)...)
	if err != nil || !strings.Contains(out, "created shop.orders") {
		t.Fatalf("sample: %v\n%s", err, out)
	}
	if _, err := runCLI(t, append([]string{"compact", "shop.orders", "--local"}, flags...)...); exitCode(err) != exitDone {
		t.Fatalf("compact the sample: exit %d (%v)", exitCode(err), err)
	}
	if _, err := runCLI(t, append([]string{"sample", "shop.orders"}, flags...)...); exitCode(err) != exitFailed {
		t.Fatalf("a second sample of the same name: exit %d (%v), want %d", exitCode(err), err, exitFailed)
	}
}

// TestCLI_AMistypedSqliteURICreatesNothing: health (read-only) and compact
// on a sqlite URI whose file does not exist fail clearly, and create no
// empty catalog file.
func TestCLI_AMistypedSqliteURICreatesNothing(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "catlog.db")
	for _, cmd := range []string{"health", "compact"} {
		args := []string{cmd, "shop.orders", "--catalog", "sql", "--uri", "file:" + missing, "--warehouse", "file://" + dir}
		if cmd == "compact" {
			args = append(args, "--local")
		}
		_, err := runCLI(t, args...)
		if err == nil || !strings.Contains(err.Error(), "no sqlite catalog") {
			t.Fatalf("%s: %v, want a clear error", cmd, err)
		}
		if _, serr := os.Stat(missing); serr == nil {
			t.Fatalf("%s created %s", cmd, missing)
		}
	}
}

// localSQLCatalog opens a fresh sqlite catalog named "local" in a temporary
// directory (driver "" is the default) and returns it with the --uri and
// --warehouse values a CLI run needs to open the same catalog.
func localSQLCatalog(t *testing.T, driver string) (catalog.Catalog, string, string) {
	t.Helper()
	dir := t.TempDir()
	uri, wh := "file:"+filepath.Join(dir, "cat.db"), "file://"+filepath.Join(dir, "wh")
	cat, err := catalogs.Open(context.Background(), catalogs.Config{Type: "sql", Name: "local", URI: uri, Warehouse: wh, SQLDriver: driver}, configAWS())
	if err != nil {
		t.Fatalf("open sqlite catalog (driver %q): %v", driver, err)
	}
	return cat, uri, wh
}
