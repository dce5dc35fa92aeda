// Package interop checks icekeeper on the tables users have: written by
// Apache Spark and Iceberg Java (the reference implementation), maintained
// by icekeeper's whole pipeline, and read back by Spark.
//
// One JVM (package sparkdriver, started by TestMain) runs Spark in local
// mode with Iceberg's Spark runtime and Iceberg Java's API. Each test has
// its own catalog, shared by Spark and icekeeper: Iceberg Java's JdbcCatalog
// over a sqlite file, which iceberg-go's sql catalog reads with the same
// schema (jdbc.schema-version=V1 on both sides), or Apache Iceberg's own
// REST catalog server (tests/interop/restserver, one per test), which
// Spark's REST catalog and iceberg-go's REST client both talk to. The
// AWS side (queues, leases, job records) is the in-process emulator the
// other end-to-end tests use.
//
// The oracle is Spark: after every icekeeper job, the rows Spark reads at
// the current snapshot, at every branch and tag and at every snapshot that
// is still kept are exactly the rows it read before, compared row by row;
// every file Spark's metadata tables name is still on storage; on a v3
// table every current row keeps its row lineage as Spark reads it through
// the metadata columns _row_id and _last_updated_sequence_number.
//
// A third opinion: PyIceberg (pinned, tests/interop/pyiceberg, installed by
// make interop-setup) reads the table as each job left it from its
// metadata file, and its rows at the current snapshot must be Spark's, on
// the top-level columns both write alike in JSON (int, long, string,
// boolean). PyIceberg 0.12 does not apply equality deletes ("PyIceberg does
// not yet support equality deletes"): such a table is logged, not compared,
// unless PyIceberg read it before the job and cannot after, which is
// damage (pyiceberg_test.go).
//
// ICEKEEPER_INTEROP=all (make interop) runs every case and writes the
// compatibility matrix, docs/INTEROP.md; otherwise (make test) a
// representative subset runs and each of its results must match the
// matrix's row.
package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/commit"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/localcloud"
	"github.com/icekeeper/icekeeper/shared/harness/localrun"
	"github.com/icekeeper/icekeeper/shared/harness/sparkdriver"
	"github.com/icekeeper/icekeeper/shared/harness/stages"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/metrics"
	"github.com/icekeeper/icekeeper/shared/plan"
	"github.com/icekeeper/icekeeper/shared/rewrite"
	committerstage "github.com/icekeeper/icekeeper/shared/stage/committer"
	rewriterstage "github.com/icekeeper/icekeeper/shared/stage/rewriter"
)

var (
	cloud  *localcloud.Cloud
	driver *sparkdriver.Driver
	seq    atomic.Int64
)

// runAll reports whether every case runs (make interop), not the subset.
func runAll() bool { return os.Getenv("ICEKEEPER_INTEROP") == "all" }

func TestMain(m *testing.M) {
	var err error
	driver, err = sparkdriver.Start(filepath.Join("..", "..", filepath.FromSlash(sparkdriver.Dir)), sparkdriver.Options{})
	if err != nil {
		if os.Getenv("ICEKEEPER_INTEROP") == "" {
			// Plain `go test ./...` without the driver built: say so and
			// skip. make test and make interop set ICEKEEPER_INTEROP and
			// build it first, so there a missing driver fails.
			fmt.Fprintf(os.Stderr, "interop: skipped: %v\n", err)
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cloud = localcloud.Start()
	code := m.Run()
	if code == 0 {
		code = finishMatrix()
	}
	cloud.Close()
	driver.Close()
	os.Exit(code)
}

// world is one test's catalog, shared by Spark (catalog name) and
// icekeeper, with one table, db.t.
type world struct {
	t    *testing.T
	ctx  context.Context
	dir  string
	name string
	kind string
	// restURI is the world's REST catalog server, once started.
	restURI string

	cfg       config.Config
	deps      *stages.Deps
	cat       catalog.Catalog
	planner   *plan.Planner
	rewriter  *rewrite.Rewriter
	committer *commit.Committer
}

const (
	kindJDBC = "jdbc"
	kindREST = "rest"
)

func newWorld(t *testing.T, kind string) *world {
	t.Helper()
	w := &world{t: t, ctx: context.Background(), dir: t.TempDir(), name: fmt.Sprintf("c%d", seq.Add(1)), kind: kind}
	switch kind {
	case kindJDBC:
		w.spark(map[string]any{"op": "catalog", "name": w.name, "props": map[string]string{
			"type": "jdbc", "uri": "jdbc:sqlite:" + w.catalogFile(), "jdbc.schema-version": "V1", "warehouse": w.warehouse(),
		}})
	case kindREST:
		// One server per world, so no prefix: RESTCatalogServer's routes
		// take none (it answers GET /v1/c1/namespaces with "No route").
		w.spark(map[string]any{"op": "catalog", "name": w.name, "props": map[string]string{
			"type": "rest", "uri": w.restServer(), "warehouse": w.warehouse(),
		}})
	default:
		t.Fatalf("unknown catalog kind %q", kind)
	}
	w.sql("CREATE NAMESPACE %s.db", w.name)
	return w
}

func (w *world) catalogFile() string { return filepath.Join(w.dir, "catalog.db") }
func (w *world) warehouse() string   { return "file://" + filepath.Join(w.dir, "warehouse") }

// T is the table's name in Spark SQL.
func (w *world) T() string { return w.name + ".db.t" }

func (w *world) spark(req map[string]any) []json.RawMessage {
	w.t.Helper()
	rows, err := driver.Request(req, 0)
	if err != nil {
		w.t.Fatalf("spark: %v", err)
	}
	return rows
}

// sql runs one Spark SQL statement; {t} stands for the table.
func (w *world) sql(format string, args ...any) []json.RawMessage {
	w.t.Helper()
	stmt := strings.ReplaceAll(fmt.Sprintf(format, args...), "{t}", w.T())
	return w.spark(map[string]any{"op": "sql", "sql": stmt})
}

// trySQL is sql that returns Spark's error instead of failing the test.
func (w *world) trySQL(format string, args ...any) ([]json.RawMessage, error) {
	stmt := strings.ReplaceAll(fmt.Sprintf(format, args...), "{t}", w.T())
	return driver.Request(map[string]any{"op": "sql", "sql": stmt}, 0)
}

// icekeeper opens icekeeper's side of the world (once): its catalog
// client and its three stages, over a fresh set of queues and tables.
func (w *world) icekeeper() {
	w.t.Helper()
	if w.cat != nil {
		return
	}
	cfg := config.Defaults()
	switch w.kind {
	case kindJDBC:
		cfg.Catalog = catalogs.Config{Type: "sql", Name: w.name, URI: "file:" + w.catalogFile(), Warehouse: w.warehouse(),
			Properties: map[string]string{"jdbc.schema-version": "V1"}}
	case kindREST:
		cfg.Catalog = catalogs.Config{Type: "rest", Name: w.name, URI: w.restServer(), Warehouse: w.warehouse()}
	}
	cfg.Prefix = "icekeeper"
	res, err := cloud.Provision(w.ctx, "i", fmt.Sprintf("%s-%s", strings.ToLower(strings.ReplaceAll(w.t.Name(), "/", "-")), w.name), cfg.MaxTaskAttempts)
	if err != nil {
		w.t.Fatalf("provision: %v", err)
	}
	res.Apply(&cfg)
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	if os.Getenv("ICEKEEPER_TEST_LOG") != "" {
		log = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	if w.deps, err = stages.NewDeps(cfg, cloud.Clients, log, stages.AllNeeds...); err != nil {
		w.t.Fatalf("deps: %v", err)
	}
	w.deps.Metrics = metrics.NewEmitter(io.Discard, metrics.DefaultNamespace, time.Now)
	if w.cat, err = stages.OpenCatalog(w.ctx, cfg, cloud.Clients); err != nil {
		w.t.Fatalf("catalog: %v", err)
	}
	if w.planner, err = w.deps.Planner(w.cat); err != nil {
		w.t.Fatal(err)
	}
	if w.rewriter, err = w.deps.Rewriter(); err != nil {
		w.t.Fatal(err)
	}
	if w.committer, err = w.deps.Committer(w.cat); err != nil {
		w.t.Fatal(err)
	}
	w.cfg = cfg
}

// load is the table as iceberg-go reads it from the shared catalog.
func (w *world) load() *table.Table {
	w.t.Helper()
	w.icekeeper()
	tbl, err := w.cat.LoadTable(w.ctx, table.Identifier{"db", "t"})
	if err != nil {
		w.t.Fatalf("icekeeper loads the table: %v", err)
	}
	return tbl
}

// drain runs rewriters and the committer until both queues are empty.
func (w *world) drain() {
	w.t.Helper()
	rh := rewriterstage.Handler{Rewrite: w.rewriter, Delete: rewriterstage.Deleter(w.deps.Deps, w.cat), List: rewriterstage.Lister(w.deps.Deps, w.cat)}.Handle
	ch := committerstage.Handler{Commit: w.committer}.Handle
	for range 20 {
		ts, err := localrun.Drain(w.ctx, w.deps.Tasks, rh, 1, 0)
		if err != nil {
			w.t.Fatalf("drain tasks: %v", err)
		}
		cs, err := localrun.Drain(w.ctx, w.deps.Commits, ch, 1, 0)
		if err != nil {
			w.t.Fatalf("drain commits: %v", err)
		}
		if ts.Delivered == 0 && cs.Delivered == 0 {
			return
		}
	}
	w.t.Fatal("the queues did not drain in 20 rounds")
}

func (w *world) job(id string) jobs.Job {
	w.t.Helper()
	j, err := w.deps.Jobs.Get(w.ctx, id)
	if err != nil {
		w.t.Fatalf("get job %s: %v", id, err)
	}
	return j
}

// rows is what Spark reads from the table at a version ("" for the current
// snapshot, a snapshot id, or a branch or tag name in quotes), each row as
// Spark's JSON of it, sorted: a multiset, compared whole.
func (w *world) rows(version string) []string {
	w.t.Helper()
	q := "SELECT * FROM {t}"
	if version != "" {
		q += " VERSION AS OF " + version
	}
	return sortedRows(w.sql("%s", q))
}

func sortedRows(raw []json.RawMessage) []string {
	out := make([]string, len(raw))
	for i, r := range raw {
		out[i] = string(r)
	}
	sort.Strings(out)
	return out
}
