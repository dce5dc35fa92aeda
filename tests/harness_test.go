// Package tests holds icekeeper's end-to-end tests: the whole pipeline
// (planner -> SQS -> rewriters -> descriptors -> committer) over the kumo
// AWS emulator, on real Iceberg tables in a sqlite catalog, with an
// order-independent fingerprint of every live row as the oracle.
package tests

import (
	"context"
	"fmt"
	"github.com/icekeeper/icekeeper/shared/harness/gluestandin"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/commit"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/fingerprint"
	"github.com/icekeeper/icekeeper/shared/harness/localcloud"
	"github.com/icekeeper/icekeeper/shared/harness/localrun"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/harness/stages"
	"github.com/icekeeper/icekeeper/shared/health"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/metrics"
	"github.com/icekeeper/icekeeper/shared/outputs"
	"github.com/icekeeper/icekeeper/shared/plan"
	"github.com/icekeeper/icekeeper/shared/rewrite"
	committerstage "github.com/icekeeper/icekeeper/shared/stage/committer"
	"github.com/icekeeper/icekeeper/shared/stage/rewriter"
	rewriterstage "github.com/icekeeper/icekeeper/shared/stage/rewriter"
)

var cloud *localcloud.Cloud

func TestMain(m *testing.M) {
	cloud = localcloud.Start(recordCalls, sendWritesTwice)
	code := m.Run()
	cloud.Close()
	if diff := checkMetricsContract(); diff != "" && code == 0 {
		fmt.Fprintln(os.Stderr, diff)
		code = 1
	}
	if denied := checkIAM(); denied != "" && code == 0 {
		fmt.Fprintln(os.Stderr, denied)
		code = 1
	}
	os.Exit(code)
}

var seq atomic.Int64

// env is one test's pipeline: its own queues, tables, bucket, catalog and
// warehouse, sharing the process-wide emulator.
type env struct {
	t         *testing.T
	ctx       context.Context
	cfg       config.Config
	deps      *stages.Deps
	cat       catalog.Catalog
	planner   *plan.Planner
	rewriter  *rewrite.Rewriter
	committer *commit.Committer
	ident     table.Identifier
	// metrics collects the EMF lines every stage emits.
	metrics *syncBuffer
	// taskDLQ is the task queue's dead-letter queue.
	taskDLQ string
	// drained is what the last drains of the task and commit queues did
	// (for a failing test's message).
	drained struct{ tasks, commits localrun.Stats }
}

func setup(t *testing.T, mutate ...func(*config.Config)) *env {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	cfg := config.Defaults()
	cfg.Catalog = catalogs.Config{Type: "sql", Name: "test", URI: "file:" + filepath.Join(dir, "catalog.db"), Warehouse: "file://" + filepath.Join(dir, "warehouse")}
	cfg.Prefix = "icekeeper"
	res, err := cloud.Provision(ctx, "t", fmt.Sprintf("%s-%d", strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")), seq.Add(1)), cfg.MaxTaskAttempts)
	if err != nil {
		t.Fatalf("provision: %v", err)
	}
	res.Apply(&cfg)
	for _, m := range mutate {
		m(&cfg)
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	if os.Getenv("ICEKEEPER_TEST_LOG") != "" {
		log = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	deps, err := stages.NewDeps(cfg, cloud.Clients, log, stages.AllNeeds...)
	if err != nil {
		t.Fatalf("deps: %v", err)
	}
	emf := &syncBuffer{}
	deps.Metrics = metrics.NewEmitter(emf, metrics.DefaultNamespace, time.Now)
	cat, err := stages.OpenCatalog(ctx, cfg, cloud.Clients)
	if err != nil {
		t.Fatalf("catalog: %v", err)
	}
	e := &env{t: t, ctx: ctx, cfg: cfg, deps: deps, cat: cat, ident: table.Identifier{"demo", "events"}, metrics: emf, taskDLQ: res.TaskDLQURL}
	if e.planner, err = deps.Planner(cat); err != nil {
		t.Fatal(err)
	}
	if e.rewriter, err = deps.Rewriter(); err != nil {
		t.Fatal(err)
	}
	if e.committer, err = deps.Committer(cat); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) name() string { return strings.Join(e.ident, ".") }

func (e *env) createTable(o sampletable.Options) *table.Table {
	e.t.Helper()
	tbl, err := sampletable.Create(e.ctx, e.cat, e.ident, o)
	if err != nil {
		e.t.Fatalf("create sample table: %v", err)
	}
	return tbl
}

func (e *env) load() *table.Table {
	e.t.Helper()
	tbl, err := e.cat.LoadTable(e.ctx, e.ident)
	if err != nil {
		e.t.Fatalf("load table: %v", err)
	}
	return tbl
}

func (e *env) fingerprint() fingerprint.Fingerprint {
	e.t.Helper()
	f, err := fingerprint.Table(e.ctx, e.load())
	if err != nil {
		e.t.Fatalf("fingerprint: %v", err)
	}
	return f
}

func (e *env) stats() health.Stats {
	e.t.Helper()
	s, err := health.Measure(e.ctx, e.load())
	if err != nil {
		e.t.Fatalf("stats: %v", err)
	}
	return s
}

func (e *env) plan() plan.Result {
	e.t.Helper()
	r, err := e.planner.PlanTable(asFunction(e.ctx, "Planner"), e.name(), "test")
	if err != nil {
		e.t.Fatalf("plan: %v", err)
	}
	return r
}

func (e *env) rewriterHandler() localrun.BatchHandler {
	return rewriterstage.Handler{Rewrite: e.rewriter, Delete: rewriter.Deleter(e.deps.Deps, e.cat), List: rewriter.Lister(e.deps.Deps, e.cat)}.Handle
}

func (e *env) committerHandler() localrun.BatchHandler {
	return committerstage.Handler{Commit: e.committer}.Handle
}

// drainTasks runs rewriters until the task queue is empty.
func (e *env) drainTasks() localrun.Stats {
	e.t.Helper()
	st, err := localrun.Drain(asFunction(e.ctx, "Rewriter"), e.deps.Tasks, e.rewriterHandler(), 1, 0)
	if err != nil {
		e.t.Fatalf("drain tasks: %v", err)
	}
	e.drained.tasks = st
	return st
}

// drainCommits runs the committer until the commit queue is empty.
func (e *env) drainCommits() localrun.Stats {
	e.t.Helper()
	st, err := localrun.Drain(asFunction(e.ctx, "Committer"), e.deps.Commits, e.committerHandler(), 1, 0)
	if err != nil {
		e.t.Fatalf("drain commits: %v", err)
	}
	e.drained.commits = st
	return st
}

func (e *env) job(id string) jobs.Job {
	e.t.Helper()
	j, err := e.deps.Jobs.Get(e.ctx, id)
	if err != nil {
		e.t.Fatalf("get job: %v", err)
	}
	return j
}

// dataFilesOnDisk lists every Parquet data file under the warehouse.
func (e *env) dataFilesOnDisk() map[string]bool {
	e.t.Helper()
	root := strings.TrimPrefix(e.cfg.Catalog.Warehouse, "file://")
	out := map[string]bool{}
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if !info.IsDir() && strings.HasSuffix(p, ".parquet") && strings.Contains(p, "/data/") {
			out[p] = true
		}
		return nil
	})
	if err != nil {
		e.t.Fatalf("walk warehouse: %v", err)
	}
	return out
}

// jobSnapshots counts snapshots stamped with the job id.
func (e *env) jobSnapshots(jobID string) int {
	n := 0
	for _, s := range e.load().Metadata().Snapshots() {
		if s.Summary != nil && s.Summary.Properties[commit.SummaryJobID] == jobID {
			n++
		}
	}
	return n
}

func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// isLive reports whether a local path is a live data file of the table.
func (e *env) isLive(localPath string) bool {
	e.t.Helper()
	tasks, err := e.load().Scan().PlanFiles(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, t := range tasks {
		if strings.TrimPrefix(t.File.FilePath(), "file://") == localPath {
			return true
		}
	}
	return false
}

// dlq counts the messages in the task dead-letter queue.
func (e *env) dlq(ctx context.Context) (int, error) {
	url := e.taskDLQ
	n := 0
	for i := 0; i < 5; i++ {
		out, err := cloud.Clients.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10})
		if err != nil {
			return 0, err
		}
		n += len(out.Messages)
		if len(out.Messages) == 0 {
			break
		}
	}
	return n, nil
}

// jobFilesOnDisk lists files under the warehouse named with any attempt id
// of the job.
func (e *env) jobFilesOnDisk(jobID string) []string {
	e.t.Helper()
	groups, err := e.deps.Jobs.Groups(e.ctx, jobID)
	if err != nil {
		e.t.Fatal(err)
	}
	attempts := 0
	for _, g := range groups {
		attempts += len(g.Attempts)
	}
	if attempts == 0 {
		e.t.Fatalf("job %s recorded no attempts", jobID)
	}
	var left []string
	batches := e.job(jobID).Batches()
	for p := range e.filesOnDisk() {
		for b := 0; b <= batches; b++ {
			if outputs.OfAttempt(p, jobs.RebaseAttempt(jobID, b)) {
				left = append(left, p) // its rebase's delete files (Parquet or Puffin)
			}
		}
	}
	for p := range e.dataFilesOnDisk() {
		for _, g := range groups {
			for _, a := range g.Attempts {
				if outputs.OfAttempt(p, a) {
					left = append(left, p)
				}
			}
		}
	}
	return left
}

// descriptor reads the descriptor stored at key.
func (e *env) descriptor(key string) messages.Descriptor {
	e.t.Helper()
	raw, err := e.deps.Blobs.Get(e.ctx, key)
	if err != nil {
		e.t.Fatal(err)
	}
	var d messages.Descriptor
	if err := messages.Decode(raw, &d); err != nil {
		e.t.Fatal(err)
	}
	return d
}

// descriptors reads the winning descriptor of each of the job's settled
// groups.
func (e *env) descriptors(jobID string) []messages.Descriptor {
	e.t.Helper()
	groups, err := e.deps.Jobs.Groups(e.ctx, jobID)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []messages.Descriptor
	for _, g := range groups {
		if g.DescriptorKey != "" {
			out = append(out, e.descriptor(g.DescriptorKey))
		}
	}
	return out
}

// requireCommitted fails the test unless the job committed and the table's
// live rows are exactly want.
func (e *env) requireCommitted(jobID string, want fingerprint.Fingerprint) {
	e.t.Helper()
	if j := e.job(jobID); j.State != jobs.Committed {
		e.t.Fatalf("job %s (%s), want committed\n%s", j.State, j.Reason, e.diagnose(jobID))
	}
	if got := e.fingerprint(); got != want {
		e.t.Fatalf("rows %s, want %s", got, want)
	}
}

// diagnose says where a job that did not end stands: its groups, the
// queues' messages and what the last drains did.
func (e *env) diagnose(jobID string) string {
	var b strings.Builder
	groups, err := e.deps.Jobs.Groups(e.ctx, jobID)
	fmt.Fprintf(&b, "groups (%v):", err)
	for _, g := range groups {
		fmt.Fprintf(&b, " [%d %s %q attempts=%d winner=%s]", g.Index, g.State, g.Reason, len(g.Attempts), g.Winner)
	}
	for _, q := range []struct{ name, url string }{{"tasks", e.cfg.TaskQueueURL}, {"commits", e.cfg.CommitQueueURL}} {
		out, err := cloud.Clients.SQS.GetQueueAttributes(e.ctx, &sqs.GetQueueAttributesInput{QueueUrl: &q.url, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
		if err != nil {
			fmt.Fprintf(&b, "\n%s queue: %v", q.name, err)
			continue
		}
		fmt.Fprintf(&b, "\n%s queue: visible %s, in flight %s", q.name, out.Attributes["ApproximateNumberOfMessages"], out.Attributes["ApproximateNumberOfMessagesNotVisible"])
	}
	n, err := e.dlq(e.ctx)
	fmt.Fprintf(&b, "\ntask dead-letter queue: %d (%v)\nlast task drain %+v, last commit drain %+v", n, err, e.drained.tasks, e.drained.commits)
	return b.String()
}

// requireAborted fails the test unless the job ended aborted for a reason
// containing why, committed nothing, left no file, and the table's live
// rows are exactly want.
func (e *env) requireAborted(jobID, why string, want fingerprint.Fingerprint) {
	e.t.Helper()
	if j := e.job(jobID); j.State != jobs.Aborted || !strings.Contains(j.Reason, why) {
		e.t.Fatalf("job %s (%s), want aborted for %q", j.State, j.Reason, why)
	}
	if got := e.fingerprint(); got != want {
		e.t.Fatalf("rows %s, want %s", got, want)
	}
	if e.jobSnapshots(jobID) != 0 {
		e.t.Fatal("aborted job committed a snapshot")
	}
	if left := e.jobFilesOnDisk(jobID); len(left) > 0 {
		e.t.Fatalf("aborted job left files %v", left)
	}
}

// catalogKinds are the catalogs the core pipeline, concurrency and conflict
// tests run over: iceberg-go's sql catalog (sqlite), its glue catalog
// against the Glue stand-in (shared/harness/gluestandin), and its rest catalog
// with SigV4 (signing name glue, as for AWS Glue's Iceberg REST endpoint)
// against the REST stand-in (rest_standin_test.go).
var catalogKinds = []string{"sql", "glue", "rest"}

// overCatalogs runs one test on a fresh env per catalog kind.
func overCatalogs(t *testing.T, run func(t *testing.T, e *env)) {
	t.Helper()
	for _, kind := range catalogKinds {
		t.Run(kind, func(t *testing.T) { run(t, setup(t, withCatalog(t, kind))) })
	}
}

// withCatalog points the env's catalog at kind (sql is setup's default).
func withCatalog(t *testing.T, kind string) func(*config.Config) {
	switch kind {
	case "sql":
		return func(*config.Config) {}
	case "glue":
		_, url := gluestandin.ForTest(t)
		dir := t.TempDir()
		return func(c *config.Config) {
			c.Catalog = catalogs.Config{Type: "glue", Name: "test", Warehouse: "file://" + filepath.Join(dir, "warehouse"),
				Properties: map[string]string{"glue.endpoint": url, "glue.region": "us-east-1"}}
		}
	case "rest":
		m, _ := withREST(t, "glue")
		return m
	}
	t.Fatalf("unknown catalog kind %q", kind)
	return nil
}
