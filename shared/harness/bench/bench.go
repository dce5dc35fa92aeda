// Package bench measures icekeeper against the physical limit of this
// machine and against iceberg-go's own compaction, side by side, in one run,
// on the same tables and the same storage. Every measured engine runs in
// child processes of the benchmark binary so that CPU time and peak
// resident memory are per process (getrusage), not blurred by the harness.
//
// Each table is of one delete kind (position deletes, deletion vectors,
// equality deletes) and holds synthetic rows (sampletable's) or, with
// Options.Data "tpch", a TPC-H table written by Spark as a user's jobs
// write it (tpch.go). For each table it measures:
//  1. raw: arrow-go reading and decoding the input Parquet and encoding and
//     writing the same rows with iceberg-go's writer settings, no Iceberg
//     (the physical limit), on 1 and 2 processes of one core each;
//  2. iceberg-go: Table.RewriteDataFiles in one process, on 1 and 2 cores;
//  3. icekeeper: the whole pipeline (planner, rewriters, committer, over the
//     in-process AWS emulator) with 1 and 2 rewriter processes of one core;
//  4. Spark's rewrite_data_files (spark.go), when its driver is built.
//
// and, for the rewriter, peak memory on groups of 1x and 4x the size. Every
// engine starts from the same snapshot (the table is rolled back after each
// run). Timings are reported, never asserted.
package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/icekeeper/icekeeper/shared/awsclients"
	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/awsrequests"
	"github.com/icekeeper/icekeeper/shared/harness/localcloud"
	"github.com/icekeeper/icekeeper/shared/harness/localrun"
	"github.com/icekeeper/icekeeper/shared/harness/s3requests"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/harness/stages"
	"github.com/icekeeper/icekeeper/shared/health"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/metrics"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/outputs"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// Options shape a benchmark run.
type Options struct {
	// Dir holds the catalog and the warehouse.
	Dir string
	// SizeMB is the input size of each table (compressed Parquet).
	SizeMB int
	// FileKB is the size of the small input files.
	FileKB int
	// TargetMB is the output file size (write.target-file-size-bytes).
	TargetMB   int
	Partitions int
	// DeleteFraction of the rows is deleted.
	DeleteFraction float64
	// Kinds of delete tables: "position" (v2), "dv" (v3 deletion vectors),
	// "equality".
	Kinds []string
	// SortColumn, when set, adds the icekeeper pipeline with one rewriter
	// as a sort compaction by that column (the table's sort order is set
	// for the run and reset after it): what sorting costs next to
	// bin-packing the same input.
	SortColumn string
	// CompressionLevel, when set, adds the icekeeper pipeline with one
	// rewriter on the same input with the table's
	// write.parquet.compression-level set to it for the run (and removed
	// after it): what the table owner's level buys and costs (CPU, output
	// size, dollars per GB) next to the default level, in the same run.
	CompressionLevel string
	// RewriterGOGC, each a value of Go's GOGC ("200", "off"), adds the
	// icekeeper pipeline with one rewriter whose process has that GOGC,
	// on the same input: what the collector costs the rewriter, next to
	// Go's default (100) in the same run. With RewriterMemoryMB the soft
	// memory limit still bounds the heap, as in the function.
	RewriterGOGC []string
	// ReadAheadBaseline adds the pipeline with one rewriter that does not
	// read ahead (ICEKEEPER_READ_AHEAD_FILES=-1), beside the default.
	ReadAheadBaseline bool
	// NoIcebergGo leaves iceberg-go's own compaction out (with S3's
	// latency held, its tens of ranged GETs a file take many minutes).
	NoIcebergGo bool
	// UploadPartMB adds, for each size, the pipeline with one rewriter
	// uploading in parts of that many MiB (ICEKEEPER_UPLOAD_PART_BYTES),
	// beside the default.
	UploadPartMB []int
	// Memory runs the rewriter memory check (groups of 1x and 4x).
	Memory bool
	// PlannerFiles are the table sizes (data files) the planner is measured
	// on; CommitFiles the size of the committer's job (0: skip).
	PlannerFiles []int
	CommitFiles  int
	// SweepTables are the fleet sizes (tables) a scheduled sweep is
	// measured on (sweep.go); FanoutGroups the job sizes (groups) the
	// fan-out to rewriters and the one commit are measured on (fanout.go).
	SweepTables  []int
	FanoutGroups []int
	// SweepConcurrency are the ICEKEEPER_SWEEP_CONCURRENCY values each
	// sweep is measured at, side by side (empty: the default alone).
	SweepConcurrency []int
	// CatalogLatency is held for each Glue request a sweep's catalog call
	// stands for (package catalogcalls), AWSLatency for each request to
	// DynamoDB, SQS and EventBridge; with S3Latency (every S3 request,
	// the tables' and icekeeper's own) they put a sweep at a real
	// account's response times. 0: the emulators' own.
	CatalogLatency time.Duration
	AWSLatency     time.Duration
	// PlannerTimeout, when positive, ends each sweep's invocation as
	// Lambda ends the planner's at its timeout (a context deadline); a
	// sweep short of time leaves a cursor and the next invocation goes on
	// from it, until the fleet is covered (sweep.go). 0: no deadline.
	PlannerTimeout time.Duration
	// BusyJobs is how many jobs each run of the busy-table scenario runs
	// (0: skip), BusyInterval the writer's interval (see busy.go).
	BusyJobs     int
	BusyInterval time.Duration
	// RowGroupMB sets the memory check's table's
	// write.parquet.row-group-size-bytes (0: iceberg-go's default, 128 MB):
	// a Parquet writer holds a whole row group before it writes it.
	RowGroupMB int
	// RewriterMemoryMB is the memory the rewriter children are told they
	// have (AWS_LAMBDA_FUNCTION_MEMORY_SIZE: Go's soft memory limit is set
	// from it, and under it the rewriter's GC percent, as in the function;
	// RewriterGOGC "100" measures Go's default beside it); 0: none.
	RewriterMemoryMB int
	// CoordinatorMemoryMB is the memory the planner and committer children
	// are told they have, as RewriterMemoryMB (the stack gives both
	// functions 1024 MB); 0: none.
	CoordinatorMemoryMB int
	// Storage is where the tables live: "local" (a folder) or "s3" (a
	// bucket in the emulator, through a counter of S3 requests that every
	// engine's requests go through; the raw baseline, which reads local
	// files, is left out).
	Storage string
	// S3Latency is held before each S3 request of a measured run (Storage
	// "s3"), as S3's time to first byte: the emulator answers at once, so
	// without it an engine that waits for each file in turn looks as fast
	// as one that reads ahead. 0: none.
	S3Latency time.Duration
	// Repeats is how many times each engine runs on each table,
	// interleaved (default 3): the report gives the median run and the
	// spread.
	Repeats int
	// ColdStartRuns is how many times each function binary is started to
	// measure its cold start (0: skip); Repo is the module's root, which
	// the binaries are built from.
	ColdStartRuns int
	Repo          string
	// ColdStartBaseline, when set, is a git revision whose function
	// binaries start interleaved with these, side by side in the report.
	ColdStartBaseline string
	// SparkDriver is the Java module of package sparkdriver (built by make
	// interop-setup): when set, Spark's rewrite_data_files runs on every
	// table beside the other engines, in local[N] for each N in
	// SparkCores (none: Spark is not measured); Spark also writes the
	// TPC-H tables.
	SparkDriver string
	SparkCores  []int
	// awsCounter counts every AWS request icekeeper's stages send (set
	// by Run).
	awsCounter *awsrequests.Proxy
	// Data is the tables' rows: DataSynthetic (the default: sampletable's
	// rows, SizeMB per table in files of FileKB over Partitions) or
	// DataTPCH: for each kind, each of TPCHTables (lineitem, orders) at
	// ScaleFactor (default 1), generated by TPCHGen (tpchgen-cli), cached
	// in TPCHCache (default: a folder under Dir) and written by Spark in
	// TPCHCommits appends (default 48), then deleted from as a CDC stream
	// deletes (tpch.go).
	Data        string
	ScaleFactor float64
	TPCHTables  []string
	TPCHCommits int
	TPCHGen     string
	TPCHCache   string
	// Self is the benchmark executable (re-run as children).
	Self string
	// Progress receives progress lines.
	Progress io.Writer
}

// Measurement is one engine's run on one table.
type Measurement struct {
	Engine   string        `json:"engine"`
	Procs    int           `json:"procs"`
	Wall     time.Duration `json:"wall_ns"`
	CPU      time.Duration `json:"cpu_ns"`
	PeakRSS  int64         `json:"peak_rss_bytes"`
	InputB   int64         `json:"input_bytes"`
	RowsOut  int64         `json:"rows_out"`
	FilesOut int           `json:"files_out"`
	CoordCPU time.Duration `json:"coordinator_cpu_ns,omitempty"`
	// StartCPU is what the engine spent before its run, not counted in
	// CPU: a JVM's start and warm-up (Spark).
	StartCPU time.Duration `json:"start_cpu_ns,omitempty"`
	// Bill is what icekeeper's run used of what AWS bills beyond S3
	// (icekeeper's runs).
	Bill      Bill `json:"bill,omitempty"`
	Committed bool `json:"committed,omitempty"`
	// OutputB is the size of the data files the table had after the run
	// (icekeeper's runs; every input file is rewritten).
	OutputB int64 `json:"output_bytes,omitempty"`
	// Requests are the S3 requests the run sent for the table's files
	// (Storage "s3"), BytesOut what it wrote.
	Requests *s3requests.Counts `json:"s3_requests,omitempty"`
	// Walls are every run's wall time (the measurement is the median run).
	Walls []time.Duration `json:"walls_ns,omitempty"`
	// Rounds are the times icekeeper's pipeline started its rewriters
	// (1 unless a task came back only after its visibility timeout), and
	// ReceiveErrors the receives that failed and were tried again, the
	// last one's error in LastReceiveError, RetriedReceives those the
	// SDK sent again (a lost response may have taken a task until its
	// visibility timeout) (icekeeper's runs).
	Rounds           int    `json:"rounds,omitempty"`
	ReceiveErrors    int    `json:"receive_errors,omitempty"`
	LastReceiveError string `json:"last_receive_error,omitempty"`
	RetriedReceives  int    `json:"retried_receives,omitempty"`
	// Billed is the rewriters' time in their handler, what Lambda bills
	// them for (waits for S3 included, the process's start and idle polls
	// not), and CoordWall the planner's and committer's, from the call to
	// its answer (icekeeper's runs).
	Billed    time.Duration `json:"billed_ns,omitempty"`
	CoordWall time.Duration `json:"coordinator_wall_ns,omitempty"`
}

// medianRun is the run of median wall time, with every run's wall time.
func medianRun(rs []Measurement) Measurement {
	sorted := slices.Clone(rs)
	slices.SortFunc(sorted, func(a, b Measurement) int { return cmp.Compare(a.Wall, b.Wall) })
	m := sorted[len(sorted)/2]
	m.Walls = nil
	for _, r := range rs {
		m.Walls = append(m.Walls, r.Wall)
	}
	return m
}

// Spread is the slowest run's wall time over the fastest's, minus one
// (0.05: the runs were within 5% of each other).
func (m Measurement) Spread() float64 {
	if len(m.Walls) < 2 {
		return 0
	}
	return float64(slices.Max(m.Walls))/float64(slices.Min(m.Walls)) - 1
}

// MBps is input megabytes (10^6) per wall second.
func (m Measurement) MBps() float64 { return float64(m.InputB) / 1e6 / m.Wall.Seconds() }

// RowsPerSec is output rows per wall second.
func (m Measurement) RowsPerSec() float64 { return float64(m.RowsOut) / m.Wall.Seconds() }

// TableResult is every measurement on one table.
type TableResult struct {
	Kind string `json:"kind"`
	// TPCH is the TPC-H table it holds (Data "tpch"; nil: synthetic rows).
	TPCH *TPCHTable `json:"tpch,omitempty"`
	// Partitions is the table's partitions.
	Partitions   int           `json:"partitions"`
	InputFiles   int           `json:"input_files"`
	InputBytes   int64         `json:"input_bytes"`
	DeleteFiles  int           `json:"delete_files"`
	LiveRows     int64         `json:"live_rows"`
	Generate     time.Duration `json:"generate_ns"`
	Measurements []Measurement `json:"measurements"`
}

// MemoryResult is the rewriter's peak memory on two group sizes.
type MemoryResult struct {
	GroupBytes []int64 `json:"group_bytes"`
	PeakRSS    []int64 `json:"peak_rss_bytes"`
	// CPU is the rewriter's CPU time on each group: what a tighter
	// memory limit costs in collection.
	CPU []time.Duration `json:"cpu_ns"`
}

// Report is a whole run.
type Report struct {
	Started time.Time     `json:"started"`
	Machine string        `json:"machine"`
	Options Options       `json:"-"`
	Tables  []TableResult `json:"tables"`
	Memory  *MemoryResult `json:"memory,omitempty"`
	Scale   []ScalePoint  `json:"scale,omitempty"`
	// Sweeps are the scheduled sweeps over fleets of tables (sweep.go);
	// Fanouts the jobs of many groups (fanout.go).
	Sweeps  []SweepPoint  `json:"sweeps,omitempty"`
	Fanouts []FanoutPoint `json:"fanouts,omitempty"`
	Busy    []BusyRun     `json:"busy,omitempty"`
	// ColdStarts are the function binaries' starts (coldstart.go).
	ColdStarts []ColdStart `json:"cold_starts,omitempty"`
}

func (o *Options) defaults() {
	if o.SizeMB <= 0 {
		o.SizeMB = 1024
	}
	if o.FileKB <= 0 {
		o.FileKB = 1024
	}
	if o.TargetMB <= 0 {
		o.TargetMB = 256
	}
	if o.Partitions <= 0 {
		o.Partitions = 4
	}
	if o.DeleteFraction <= 0 {
		o.DeleteFraction = 0.05
	}
	if len(o.Kinds) == 0 {
		o.Kinds = []string{"position", "dv", "equality"}
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Storage == "" {
		o.Storage = "local"
	}
	if o.Repeats <= 0 {
		o.Repeats = 3
	}
	if o.Data == "" {
		o.Data = DataSynthetic
	}
	if o.ScaleFactor <= 0 {
		o.ScaleFactor = 1
	}
	if len(o.TPCHTables) == 0 {
		o.TPCHTables = []string{"lineitem", "orders"}
	}
	if o.TPCHCommits <= 0 {
		o.TPCHCommits = 48
	}
}

const payloadBytes = 160

// Run runs the benchmark.
func Run(ctx context.Context, o Options) (Report, error) {
	o.defaults()
	rep := Report{Started: time.Now().UTC(), Machine: machine(), Options: o}
	cloud, err := localcloud.Listen("127.0.0.1:0")
	if err != nil {
		return rep, err
	}
	defer cloud.Close()
	var storage *s3Storage
	switch o.Storage {
	case "local":
	case "s3":
		if storage, err = newS3Storage(ctx, cloud); err != nil {
			return rep, err
		}
		storage.latency = o.S3Latency
		defer storage.close()
	default:
		return rep, fmt.Errorf("bench: storage %q: want local or s3", o.Storage)
	}
	cat, catCfg, err := openCatalogIn(ctx, o.Dir, storage)
	if err != nil {
		return rep, err
	}
	if o.awsCounter, err = awsrequests.Start(cloud.URL); err != nil {
		return rep, err
	}
	defer o.awsCounter.Close()

	anyKind := slices.ContainsFunc(o.Kinds, func(k string) bool { return k != "" })
	// The tables' data: synthetic rows (one table per kind), or the TPC-H
	// tables (one per kind and TPC-H table) from the generator's output.
	sources := []string{""}
	var tpchDir, tpchGen string
	switch o.Data {
	case DataSynthetic:
	case DataTPCH:
		sources = o.TPCHTables
		for _, t := range sources {
			if _, ok := tpchShapes[t]; !ok {
				return rep, fmt.Errorf("bench: TPC-H table %q: want lineitem or orders", t)
			}
		}
		if anyKind {
			if tpchDir, tpchGen, err = tpchSource(ctx, o); err != nil {
				return rep, err
			}
		}
	default:
		return rep, fmt.Errorf("bench: data %q: want %s or %s", o.Data, DataSynthetic, DataTPCH)
	}
	var rowsPerMB float64
	if (anyKind && o.Data == DataSynthetic) || o.Memory {
		if rowsPerMB, err = calibrate(ctx, cat, o); err != nil {
			return rep, err
		}
	}
	for _, kind := range o.Kinds {
		if kind == "" {
			continue
		}
		for _, src := range sources {
			tr, err := runTable(ctx, o, cat, catCfg, cloud, storage, kind, tableData{rowsPerMB: rowsPerMB, tpchTable: src, tpchDir: tpchDir, tpchGen: tpchGen})
			if err != nil {
				return rep, fmt.Errorf("bench %s: %w", strings.TrimSuffix(kind+" "+src, " "), err)
			}
			rep.Tables = append(rep.Tables, tr)
		}
	}
	if o.Memory {
		mr, err := runMemory(ctx, o, cat, catCfg, cloud, rowsPerMB)
		if err != nil {
			return rep, fmt.Errorf("bench memory: %w", err)
		}
		rep.Memory = &mr
	}
	if o.BusyJobs > 0 {
		if rep.Busy, err = RunBusy(ctx, BusyOptions{Dir: o.Dir, Jobs: o.BusyJobs, Interval: o.BusyInterval, Progress: o.Progress}); err != nil {
			return rep, fmt.Errorf("bench busy: %w", err)
		}
	}
	if o.ColdStartRuns > 0 {
		if rep.ColdStarts, err = RunColdStarts(ctx, ColdStartOptions{Repo: o.Repo, Dir: o.Dir, Runs: o.ColdStartRuns, Baseline: o.ColdStartBaseline, Progress: o.progress}); err != nil {
			return rep, fmt.Errorf("bench cold start: %w", err)
		}
	}
	if len(o.SweepTables) > 0 {
		if rep.Sweeps, err = RunSweeps(ctx, o, o.SweepTables); err != nil {
			return rep, fmt.Errorf("bench sweeps: %w", err)
		}
	}
	if len(o.FanoutGroups) > 0 {
		if rep.Fanouts, err = RunFanouts(ctx, o, o.FanoutGroups); err != nil {
			return rep, fmt.Errorf("bench fan-out: %w", err)
		}
	}
	if len(o.PlannerFiles) > 0 || o.CommitFiles > 0 {
		if rep.Scale, err = RunScale(ctx, o, o.PlannerFiles, o.CommitFiles); err != nil {
			return rep, fmt.Errorf("bench scale: %w", err)
		}
	}
	return rep, nil
}

func openCatalog(ctx context.Context, dir string) (catalog.Catalog, catalogs.Config, error) {
	return openCatalogIn(ctx, dir, nil)
}

// openCatalogIn opens the sql catalog in dir, with its warehouse in dir or,
// with storage, in storage's bucket.
func openCatalogIn(ctx context.Context, dir string, storage *s3Storage) (catalog.Catalog, catalogs.Config, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, catalogs.Config{}, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, catalogs.Config{}, err
	}
	cc := catalogs.Config{Type: "sql", Name: "bench", URI: "file:" + filepath.Join(abs, "catalog.db"), Warehouse: "file://" + filepath.Join(abs, "warehouse")}
	if storage != nil {
		cc.Warehouse, cc.Properties = storage.warehouse, storage.props
	}
	cat, err := catalogs.Open(ctx, cc, aws.Config{})
	return cat, cc, err
}

// s3Storage is a bucket in the emulator behind a request counter.
type s3Storage struct {
	counter   *s3requests.Proxy
	latency   time.Duration
	warehouse string
	props     map[string]string
}

func newS3Storage(ctx context.Context, cloud *localcloud.Cloud) (*s3Storage, error) {
	bucket := fmt.Sprintf("bench-warehouse-%d", time.Now().UnixNano())
	if _, err := cloud.Clients.S3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		return nil, err
	}
	p, err := s3requests.Start(cloud.URL)
	if err != nil {
		return nil, err
	}
	return &s3Storage{counter: p, warehouse: "s3://" + bucket + "/wh", props: map[string]string{
		"s3.endpoint": p.URL, "s3.region": "us-east-1", "s3.access-key-id": "test", "s3.secret-access-key": "test",
		"s3.force-virtual-addressing": "false",
	}}, nil
}

func (s *s3Storage) close() { _ = s.counter.Close() }

// measure runs run with the counter reset and attaches what it counted.
func (s *s3Storage) measure(run func() (Measurement, error)) (Measurement, error) {
	if s == nil {
		return run()
	}
	s.counter.Reset()
	s.counter.SetLatency(s.latency)
	m, err := run()
	s.counter.SetLatency(0)
	c := s.counter.Counts()
	m.Requests = &c
	return m, err
}

// calibrate measures compressed bytes per row of the benchmark rows.
func calibrate(ctx context.Context, cat catalog.Catalog, o Options) (float64, error) {
	ident := table.Identifier{"bench", fmt.Sprintf("calibrate_%d", time.Now().UnixNano())}
	tbl, err := sampletable.CreateBulk(ctx, cat, ident, sampletable.BulkOptions{FormatVersion: 2, Partitions: 1, Rows: 100_000, BatchRows: 10_000, FileBytes: 64 << 20, PayloadBytes: payloadBytes})
	if err != nil {
		return 0, err
	}
	st, err := health.Measure(ctx, tbl)
	if err != nil {
		return 0, err
	}
	return float64(st.DataRecords) / (float64(st.DataBytes) / 1e6), nil
}

func (o Options) progress(format string, args ...any) {
	fmt.Fprintf(o.Progress, time.Now().Format("15:04:05")+" "+format+"\n", args...)
}

// tableData is what a table of runTable holds: synthetic rows (rowsPerMB
// of them per MB) or, with tpchTable set, that TPC-H table from the
// generator's output in tpchDir (generator version tpchGen).
type tableData struct {
	rowsPerMB                   float64
	tpchTable, tpchDir, tpchGen string
}

func runTable(ctx context.Context, o Options, cat catalog.Catalog, cc catalogs.Config, cloud *localcloud.Cloud, storage *s3Storage, kind string, data tableData) (TableResult, error) {
	tr := TableResult{Kind: kind, Partitions: o.Partitions}
	ident := table.Identifier{"bench", kind}
	if data.tpchTable != "" {
		ident = table.Identifier{"bench", kind + "_" + data.tpchTable}
	}
	name := strings.Join(ident, ".")
	start := time.Now()
	if data.tpchTable == "" {
		rows := int64(float64(o.SizeMB) * data.rowsPerMB * 1.02)
		o.progress("generating %s: %d MB, %d rows, files of %d KB, %d partitions", name, o.SizeMB, rows, o.FileKB, o.Partitions)
		if _, err := sampletable.CreateBulk(ctx, cat, ident, sampletable.BulkOptions{
			FormatVersion: formatVersion(kind), Partitions: o.Partitions, Rows: rows, BatchRows: batchRows(o, data.rowsPerMB), FileBytes: int64(o.FileKB) << 10,
			PayloadBytes: payloadBytes, DeleteFraction: o.DeleteFraction, DeleteKind: deleteKind(kind),
		}); err != nil {
			return tr, err
		}
	} else {
		o.progress("writing %s with Spark: TPC-H %s at scale factor %g, %d appends, %s deletes", name, data.tpchTable, o.ScaleFactor, o.TPCHCommits, kind)
		t, err := writeTPCH(ctx, o, cat, cc, storage, ident, kind, data.tpchDir, data.tpchTable)
		if err != nil {
			return tr, err
		}
		t.Generator = data.tpchGen
		tr.TPCH, tr.Partitions = &t, t.Partitions
	}
	if err := setProperty(ctx, cat, ident, table.WriteTargetFileSizeBytesKey, strconv.Itoa(o.TargetMB<<20)); err != nil {
		return tr, err
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return tr, err
	}
	tr.Generate = time.Since(start)
	st, err := health.Measure(ctx, tbl)
	if err != nil {
		return tr, err
	}
	tr.InputFiles, tr.InputBytes, tr.DeleteFiles = st.DataFiles, st.DataBytes, st.DeleteFiles()
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return tr, err
	}
	var paths []string
	for _, t := range tasks {
		paths = append(paths, t.File.FilePath())
	}
	pinned := tbl.CurrentSnapshot().SnapshotID
	o.progress("%s: %d data files, %.0f MB, %d delete files, generated in %s", name, tr.InputFiles, float64(tr.InputBytes)/1e6, tr.DeleteFiles, tr.Generate.Round(time.Second))

	inputs := make(map[string]bool, len(paths))
	for _, p := range paths {
		inputs[p] = true
	}
	// rollback puts the table back at the pinned snapshot and removes the
	// data files the run wrote: on S3 the emulator holds every object in
	// this process's memory, and a whole run's outputs (every engine, every
	// repeat) would not fit in it.
	rollback := func() error {
		cur, err := cat.LoadTable(ctx, ident)
		if err != nil {
			return err
		}
		if cur.CurrentSnapshot().SnapshotID == pinned {
			return nil
		}
		now, err := cur.Scan().PlanFiles(ctx)
		if err != nil {
			return err
		}
		var written []string
		for _, t := range now {
			if !inputs[t.File.FilePath()] {
				written = append(written, t.File.FilePath())
			}
		}
		txn := cur.NewTransaction()
		if err := txn.RollbackToSnapshot(pinned); err != nil {
			return err
		}
		if cur, err = txn.Commit(ctx); err != nil {
			return err
		}
		return outputs.Remove(ctx, cur, written)
	}
	gomax := func(n int) []string { return []string{"GOMAXPROCS=" + strconv.Itoa(n)} }

	// Every engine runs Repeats times, interleaved (all engines once, then
	// all again), so that a slow spell of the machine falls on every
	// engine alike; each engine reports its median run and the spread.
	type engine struct {
		what string
		run  func() (Measurement, error)
	}
	var engines []engine
	// 1. The physical limit: one and two processes of one core (local
	// files only).
	for _, n := range []int{1, 2} {
		if storage != nil {
			break
		}
		engines = append(engines, engine{fmt.Sprintf("raw arrow-go rewrite, %d process(es)", n), func() (Measurement, error) {
			return runRaw(ctx, o, paths, n, gomax(1))
		}})
	}
	// 2. iceberg-go's own compaction in one process, on one and two cores.
	for _, n := range []int{1, 2} {
		if o.NoIcebergGo {
			break
		}
		engines = append(engines, engine{fmt.Sprintf("iceberg-go RewriteDataFiles, %d core(s)", n), func() (Measurement, error) {
			m, err := storage.measure(func() (Measurement, error) {
				p, err := runChild(ctx, o.Self, gomax(n), "iceberg", IcebergArgs{Catalog: cc, Table: name})
				if err != nil {
					return Measurement{}, err
				}
				var out IcebergOut
				if err := decodeOut(p, &out); err != nil {
					return Measurement{}, err
				}
				return Measurement{Engine: "iceberg-go", Procs: n, Wall: p.Wall, CPU: p.CPU, PeakRSS: p.PeakRSS,
					InputB: tr.InputBytes, RowsOut: out.Rows, FilesOut: out.FilesOut, Committed: true}, nil
			})
			if err != nil {
				return m, err
			}
			return m, rollback()
		}})
	}
	// 3. The icekeeper pipeline with one and two rewriters of one core.
	for _, n := range []int{1, 2} {
		engines = append(engines, engine{fmt.Sprintf("icekeeper pipeline, %d rewriter(s)", n), func() (Measurement, error) {
			m, err := storage.measure(func() (Measurement, error) { return runPipeline(ctx, o, cat, cc, cloud, name, n, 0, pipelineRun{}) })
			if err != nil {
				return m, err
			}
			m.InputB = tr.InputBytes
			if m.OutputB, err = dataBytes(ctx, cat, ident); err != nil {
				return m, err
			}
			return m, rollback()
		}})
	}
	// 3a. Spark's rewrite_data_files, the peer a user would pick, in
	// local[N] with N concurrent file groups.
	for _, n := range o.SparkCores {
		if o.SparkDriver == "" {
			break // Spark is not measured without its driver
		}
		engines = append(engines, engine{fmt.Sprintf("Spark rewrite_data_files, local[%d]", n), func() (Measurement, error) {
			m, err := storage.measure(func() (Measurement, error) {
				m, _, err := runSpark(ctx, o, cc, storage, name, n)
				return m, err
			})
			if err != nil {
				return m, err
			}
			m.InputB = tr.InputBytes
			// As the other engines' rows: the data files' records.
			after, err := cat.LoadTable(ctx, ident)
			if err != nil {
				return m, err
			}
			st, err := health.Measure(ctx, after)
			if err != nil {
				return m, err
			}
			m.RowsOut, m.OutputB = st.DataRecords, st.DataBytes
			return m, rollback()
		}})
	}
	// 3b. The same with the table's compression level set, one rewriter.
	if o.CompressionLevel != "" {
		engines = append(engines, engine{"icekeeper pipeline, write.parquet.compression-level " + o.CompressionLevel + ", 1 rewriter", func() (Measurement, error) {
			if err := setProperty(ctx, cat, ident, table.ParquetCompressionLevelKey, o.CompressionLevel); err != nil {
				return Measurement{}, err
			}
			m, err := storage.measure(func() (Measurement, error) { return runPipeline(ctx, o, cat, cc, cloud, name, 1, 0, pipelineRun{}) })
			if err != nil {
				return m, err
			}
			m.Engine, m.InputB = EngineLevel, tr.InputBytes
			if m.OutputB, err = dataBytes(ctx, cat, ident); err != nil {
				return m, err
			}
			if err := rollback(); err != nil {
				return m, err
			}
			return m, setProperty(ctx, cat, ident, table.ParquetCompressionLevelKey, "")
		}})
	}
	// 3c. The same with the rewriter's GOGC set, one rewriter each.
	for _, gogc := range o.RewriterGOGC {
		engines = append(engines, engine{"icekeeper pipeline, GOGC=" + gogc + ", 1 rewriter", func() (Measurement, error) {
			m, err := storage.measure(func() (Measurement, error) {
				return runPipeline(ctx, o, cat, cc, cloud, name, 1, 0, pipelineRun{rewriterEnv: []string{"GOGC=" + gogc}})
			})
			if err != nil {
				return m, err
			}
			m.Engine, m.InputB = EngineGOGC+gogc, tr.InputBytes
			if m.OutputB, err = dataBytes(ctx, cat, ident); err != nil {
				return m, err
			}
			return m, rollback()
		}})
	}
	// 3d. The same without reading ahead, one rewriter.
	if o.ReadAheadBaseline {
		engines = append(engines, engine{"icekeeper pipeline, no read-ahead, 1 rewriter", func() (Measurement, error) {
			m, err := storage.measure(func() (Measurement, error) {
				return runPipeline(ctx, o, cat, cc, cloud, name, 1, 0, pipelineRun{rewriterEnv: []string{config.EnvReadAheadFiles + "=-1"}})
			})
			if err != nil {
				return m, err
			}
			m.Engine, m.InputB = EngineNoReadAhead, tr.InputBytes
			if m.OutputB, err = dataBytes(ctx, cat, ident); err != nil {
				return m, err
			}
			return m, rollback()
		}})
	}
	// 3e. The same uploading in other parts, one rewriter.
	for _, mb := range o.UploadPartMB {
		engines = append(engines, engine{fmt.Sprintf("icekeeper pipeline, %d MiB upload parts, 1 rewriter", mb), func() (Measurement, error) {
			m, err := storage.measure(func() (Measurement, error) {
				return runPipeline(ctx, o, cat, cc, cloud, name, 1, 0, pipelineRun{rewriterEnv: []string{config.EnvUploadPartBytes + "=" + strconv.Itoa(mb<<20)}})
			})
			if err != nil {
				return m, err
			}
			m.Engine, m.InputB = EngineParts(mb), tr.InputBytes
			if m.OutputB, err = dataBytes(ctx, cat, ident); err != nil {
				return m, err
			}
			return m, rollback()
		}})
	}
	// 4. A sort compaction of the same input, one rewriter.
	if o.SortColumn != "" {
		engines = append(engines, engine{"icekeeper pipeline, sorted by " + o.SortColumn + ", 1 rewriter", func() (Measurement, error) {
			if err := setSortOrder(ctx, cat, ident, o.SortColumn); err != nil {
				return Measurement{}, err
			}
			m, err := storage.measure(func() (Measurement, error) {
				return runPipeline(ctx, o, cat, cc, cloud, name, 1, 0, pipelineRun{layout: &plan.Layout{Strategy: optin.StrategySort}})
			})
			if err != nil {
				return m, err
			}
			m.Engine, m.InputB = EngineSorted, tr.InputBytes
			if err := rollback(); err != nil {
				return m, err
			}
			return m, setSortOrder(ctx, cat, ident, "")
		}})
		// 5. The same sort with a group limit of a quarter of each
		// partition's share: each partition's run is sorted in two stages
		// (four maps, the exchange, four reduces).
		engines = append(engines, engine{"icekeeper pipeline, sorted by " + o.SortColumn + " in two stages, 1 rewriter", func() (Measurement, error) {
			if err := setSortOrder(ctx, cat, ident, o.SortColumn); err != nil {
				return Measurement{}, err
			}
			m, err := storage.measure(func() (Measurement, error) {
				return runPipeline(ctx, o, cat, cc, cloud, name, 1, 0, pipelineRun{layout: &plan.Layout{Strategy: optin.StrategySort}, maxGroupBytes: tr.InputBytes/int64(4*max(tr.Partitions, 1)) + 1})
			})
			if err != nil {
				return m, err
			}
			m.Engine, m.InputB = EngineTwoStage, tr.InputBytes
			if err := rollback(); err != nil {
				return m, err
			}
			return m, setSortOrder(ctx, cat, ident, "")
		}})
	}
	runs := make([][]Measurement, len(engines))
	for rep := 0; rep < o.Repeats; rep++ {
		for i, e := range engines {
			o.progress("%s: %s (run %d of %d)", name, e.what, rep+1, o.Repeats)
			m, err := e.run()
			if err != nil {
				return tr, err
			}
			runs[i] = append(runs[i], m)
		}
	}
	for _, rs := range runs {
		tr.Measurements = append(tr.Measurements, medianRun(rs))
	}
	for _, m := range tr.Measurements {
		if m.Engine == "icekeeper" {
			tr.LiveRows = m.RowsOut
		}
	}
	return tr, nil
}

// formatVersion and deleteKind map a benchmark kind to a table: "position"
// is a v2 table with position deletes, "dv" a v3 table whose merge-on-read
// delete writes deletion vectors, "equality" a v2 table with an equality
// delete.
func formatVersion(kind string) int {
	if kind == "dv" {
		return 3
	}
	return 2
}

func deleteKind(kind string) string {
	if kind == "dv" {
		return "position"
	}
	return kind
}

// batchRows sizes the generator's batches at about half a small file per
// partition, since the writer rolls files between batches.
func batchRows(o Options, rowsPerMB float64) int {
	return max(200, int(float64(o.FileKB)/1024*rowsPerMB/2))
}

func runRaw(ctx context.Context, o Options, paths []string, procs int, env []string) (Measurement, error) {
	m := Measurement{Engine: "raw arrow-go", Procs: procs}
	outDir := filepath.Join(o.Dir, "raw-out", strconv.FormatInt(time.Now().UnixNano(), 10))
	defer os.RemoveAll(outDir)
	type running struct {
		wait func() (Proc, error)
	}
	start := time.Now()
	var rs []running
	for i := 0; i < procs; i++ {
		var part []string
		for j := i; j < len(paths); j += procs {
			part = append(part, paths[j])
		}
		_, wait, err := child(ctx, o.Self, env, "raw", RawArgs{Paths: part, OutDir: filepath.Join(outDir, strconv.Itoa(i)), Target: int64(o.TargetMB) << 20})
		if err != nil {
			return m, err
		}
		rs = append(rs, running{wait})
	}
	for _, r := range rs {
		p, err := r.wait()
		if err != nil {
			return m, err
		}
		var out RawResult
		if err := decodeOut(p, &out); err != nil {
			return m, err
		}
		m.CPU += p.CPU
		m.PeakRSS = max(m.PeakRSS, p.PeakRSS)
		m.InputB += out.BytesIn
		m.RowsOut += out.Rows
		m.FilesOut += out.FilesOut
	}
	m.Wall = time.Since(start)
	return m, nil
}

// runPipeline runs one complete cycle: plan here, rewriters in n child
// processes, commit here. targetOverride (bytes) sizes the groups; with
// maxGroups > 0 only that many groups are rewritten and nothing is
// committed (the memory check).
func runPipeline(ctx context.Context, o Options, cat catalog.Catalog, cc catalogs.Config, cloud *localcloud.Cloud, name string, n int, targetOverride int64, run pipelineRun) (Measurement, error) {
	m, _, err := pipeline(ctx, o, cat, cc, cloud, name, n, targetOverride, 0, run)
	return m, err
}

// pipelineRun is what one pipeline run plans: a layout (nil: the
// table's), and a group size limit (0: the default).
type pipelineRun struct {
	layout        *plan.Layout
	maxGroupBytes int64
	rewriterEnv   []string // added to the rewriter processes' environment
}

// EngineSorted and EngineTwoStage name the sort compaction's
// measurements: one rewriter's group per run, and the same sort of runs
// four times the group limit (the two-stage exchange).
const (
	EngineSorted   = "icekeeper, sorted"
	EngineTwoStage = "icekeeper, sorted in two stages"
)

// EngineLevel names the measurement at the table's compression level
// Options.CompressionLevel (one rewriter).
const EngineLevel = "icekeeper, compression level"

// EngineNoReadAhead names the measurement of a rewriter that does not
// read ahead (Options.ReadAheadBaseline).
const EngineNoReadAhead = "icekeeper, no read-ahead"

// EngineParts names the measurement of a rewriter uploading in parts of
// mb MiB (Options.UploadPartMB).
func EngineParts(mb int) string { return fmt.Sprintf("icekeeper, %d MiB parts", mb) }

// EngineGOGC prefixes the measurements with the rewriter's GOGC set
// (Options.RewriterGOGC): "icekeeper, GOGC=400".
const EngineGOGC = "icekeeper, GOGC="

// setProperty sets a table property (value "": removes it).
func setProperty(ctx context.Context, cat catalog.Catalog, ident table.Identifier, key, value string) error {
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return err
	}
	txn := tbl.NewTransaction()
	if value == "" {
		err = txn.RemoveProperties([]string{key})
	} else {
		err = txn.SetProperties(map[string]string{key: value})
	}
	if err == nil {
		_, err = txn.Commit(ctx)
	}
	if err != nil {
		return fmt.Errorf("set %s=%q: %w", key, value, err)
	}
	return nil
}

// dataBytes is the size of the table's current data files.
func dataBytes(ctx context.Context, cat catalog.Catalog, ident table.Identifier) (int64, error) {
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return 0, err
	}
	st, err := health.Measure(ctx, tbl)
	if err != nil {
		return 0, fmt.Errorf("measure the output: %w", err)
	}
	return st.DataBytes, nil
}

// setSortOrder makes column the table's sort order ("" unsorted).
func setSortOrder(ctx context.Context, cat catalog.Catalog, ident table.Identifier, column string) error {
	tbl, err := cat.LoadTable(ctx, ident)
	if err == nil {
		_, err = sampletable.SortBy(ctx, tbl, column)
	}
	return err
}

// roundsFor bounds how long pipeline waits for a job to end: longer than
// the rewriter's two-minute visibility on receipt.
const roundsFor = 3 * time.Minute

func pipeline(ctx context.Context, o Options, cat catalog.Catalog, cc catalogs.Config, cloud *localcloud.Cloud, name string, n int, targetOverride int64, maxGroups int, run pipelineRun) (Measurement, int64, error) {
	m := Measurement{Engine: "icekeeper", Procs: n}
	cfg := config.Defaults()
	cfg.Catalog = cc
	cfg.TargetFileSize = targetOverride
	if run.maxGroupBytes > 0 {
		cfg.MaxGroupBytes = run.maxGroupBytes
	}
	cfg.LeaseTTL = time.Hour
	res, err := cloud.Provision(ctx, "bench", "", cfg.MaxTaskAttempts)
	if err != nil {
		return m, 0, err
	}
	res.Apply(&cfg)
	// The stages reach AWS through the request counter (the bill) and
	// log as the functions do, counted; the harness watches the job
	// through its own clients, not counted.
	endpoint, clients := cloud.URL, cloud.Clients
	if o.awsCounter != nil {
		endpoint, clients = o.awsCounter.URL, awsclients.ForEndpoint(o.awsCounter.URL, "us-east-1", localcloud.PlainRequestBodies)
		o.awsCounter.Reset()
	}
	logs := &LogCounter{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	deps, err := stages.NewDeps(cfg, clients, log, stages.AllNeeds...)
	if err != nil {
		return m, 0, err
	}
	deps.Metrics = metrics.NewEmitter(logs, "", nil)
	st, _, err := deps.LocalStages(cat)
	if err != nil {
		return m, 0, err
	}
	watch, err := jobs.NewStore(cloud.Clients.DynamoDB, cfg.JobsTable, time.Now)
	if err != nil {
		return m, 0, err
	}
	env := []string{"GOMAXPROCS=1", "AWS_ENDPOINT_URL=" + endpoint, "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test"}
	if o.RewriterMemoryMB > 0 {
		env = append(env, "AWS_LAMBDA_FUNCTION_MEMORY_SIZE="+strconv.Itoa(o.RewriterMemoryMB))
	}
	cfg.Mode, cfg.Grants = config.ModeActive, strings.SplitN(name, ".", 2)[0]
	for k, v := range cfg.Env() {
		env = append(env, k+"="+v)
	}
	cpu0 := selfCPU()
	start := time.Now()
	var pr plan.Result
	if run.layout != nil {
		pr, err = st.Plan.PlanLayout(ctx, name, "bench", *run.layout)
	} else {
		pr, err = st.Plan.PlanTable(ctx, name, "bench")
	}
	if err != nil {
		return m, 0, err
	}
	m.CoordWall = time.Since(start)
	if pr.JobID == "" {
		return m, 0, fmt.Errorf("planner did not plan %s: %s (%s)", name, pr.Outcome, pr.Reason)
	}
	groupBytes := pr.InputBytes / int64(max(pr.Groups, 1))
	// Rewriters drain the task queue, then the committer the commit
	// queue; a two-stage sort goes round twice (its reduces are sent by
	// the committer once its maps are done).
	// A job that is not done after a round goes round again until
	// roundsFor has passed: a delivery the emulator cut short under load
	// comes back only when its visibility timeout runs out, as on SQS.
	var j jobs.Job
	var delivered, failed int
	var rewriterLogs int64
	deadline := time.Now().Add(roundsFor)
	for round := 0; ; round++ {
		var waits []func() (Proc, error)
		for i := 0; i < n; i++ {
			_, wait, err := child(ctx, o.Self, append(slices.Clip(env), run.rewriterEnv...), "rewriter", RewriterArgs{MaxGroups: maxGroups})
			if err != nil {
				return m, 0, err
			}
			waits = append(waits, wait)
		}
		for _, w := range waits {
			p, err := w()
			if err != nil {
				return m, 0, err
			}
			var out RewriterOut
			if err := decodeOut(p, &out); err != nil {
				return m, 0, err
			}
			m.CPU += p.CPU
			m.Billed += out.Busy
			m.PeakRSS = max(m.PeakRSS, p.PeakRSS)
			delivered, failed = delivered+out.Delivered, failed+out.Failed
			m.ReceiveErrors += out.ReceiveErrors
			m.RetriedReceives += out.RetriedReceives
			if out.LastReceiveError != "" {
				m.LastReceiveError = out.LastReceiveError
			}
			rewriterLogs += out.LogBytes
			m.Bill.RewriterInvocations += int64(out.Delivered)
		}
		if maxGroups > 0 {
			m.Wall = time.Since(start)
			return m, groupBytes, nil // the memory check commits nothing
		}
		commitStart := time.Now()
		cs, err := localrun.Drain(ctx, deps.Commits, st.Committer, 1, 0)
		if err != nil {
			return m, 0, err
		}
		m.CoordWall += time.Since(commitStart)
		delivered, failed = delivered+cs.Delivered, failed+cs.Failed
		m.ReceiveErrors += cs.ReceiveErrors
		m.RetriedReceives += cs.RetriedReceives
		if cs.LastReceiveError != "" {
			m.LastReceiveError = cs.LastReceiveError
		}
		m.Rounds = round + 1
		m.Bill.CommitterInvocations += int64(cs.Delivered)
		if j, err = watch.Get(ctx, pr.JobID); err != nil {
			return m, 0, err
		}
		if j.State.Terminal() || time.Now().After(deadline) {
			break
		}
		if round == 0 {
			o.progress("%s: job %s is %s after its rewriters, %d of %d groups done; %s", name, j.ID, j.State, len(j.DoneGroups), j.Groups, queuesNow(ctx, cloud, cfg))
		}
		if round > 0 {
			time.Sleep(time.Second) // nothing to receive yet: wait for it
		}
	}
	m.Wall = time.Since(start)
	m.CoordCPU = selfCPU() - cpu0
	m.Committed = j.State == "committed"
	m.Bill.PlannerInvocations, m.Bill.Groups = 1, pr.Groups
	m.Bill.LogBytes = logs.Bytes() + rewriterLogs
	if o.awsCounter != nil {
		c := o.awsCounter.Counts()
		m.Bill.AWS = &c
	}
	if !m.Committed {
		return m, 0, fmt.Errorf("pipeline job %s: %s (%s) after %d deliveries, %d of them failed", j.ID, j.State, j.Reason, delivered, failed)
	}
	tbl, err := cat.LoadTable(ctx, table.Identifier{"bench", strings.SplitN(name, ".", 2)[1]})
	if err != nil {
		return m, 0, err
	}
	after, err := health.Measure(ctx, tbl)
	if err != nil {
		return m, 0, err
	}
	m.RowsOut, m.FilesOut = after.DataRecords, after.DataFiles
	return m, groupBytes, nil
}

// queuesNow says what the pipeline's queues hold: messages visible and in
// flight (SQS's approximate counts).
func queuesNow(ctx context.Context, cloud *localcloud.Cloud, cfg config.Config) string {
	var parts []string
	for _, q := range []struct{ what, url string }{{"tasks", cfg.TaskQueueURL}, {"commit requests", cfg.CommitQueueURL}} {
		out, err := cloud.Clients.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(q.url),
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
		if err != nil {
			parts = append(parts, q.what+": "+err.Error())
			continue
		}
		parts = append(parts, fmt.Sprintf("%s: %s visible, %s in flight", q.what, out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)], out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)]))
	}
	return strings.Join(parts, "; ")
}

// runMemory measures one rewriter's peak memory on a group of 1x and one
// of 4x the size: an unpartitioned table of SizeMB planned with a target of
// SizeMB/4 (groups of about a quarter) and of SizeMB (one group of all of
// it). Nothing is committed.
func runMemory(ctx context.Context, o Options, cat catalog.Catalog, cc catalogs.Config, cloud *localcloud.Cloud, rowsPerMB float64) (MemoryResult, error) {
	var r MemoryResult
	name := "bench.memory"
	rows := int64(float64(o.SizeMB) * rowsPerMB * 1.02)
	o.progress("generating %s: %d MB in one partition", name, o.SizeMB)
	if _, err := sampletable.CreateBulk(ctx, cat, table.Identifier{"bench", "memory"}, sampletable.BulkOptions{
		FormatVersion: 2, Rows: rows, BatchRows: batchRows(o, rowsPerMB), FileBytes: int64(o.FileKB) << 10,
		PayloadBytes: payloadBytes, DeleteFraction: o.DeleteFraction, DeleteKind: "position",
	}); err != nil {
		return r, err
	}
	if o.RowGroupMB > 0 {
		if err := setProperty(ctx, cat, table.Identifier{"bench", "memory"}, table.ParquetRowGroupSizeBytesKey, strconv.Itoa(o.RowGroupMB<<20)); err != nil {
			return r, err
		}
	}
	big := int64(o.SizeMB) << 20
	for _, target := range []int64{big / 4, big} {
		o.progress("%s: rewriter memory on a group of about %d MB", name, target>>20)
		m, groupBytes, err := pipeline(ctx, o, cat, cc, cloud, name, 1, target, 1, pipelineRun{})
		if err != nil {
			return r, err
		}
		r.GroupBytes = append(r.GroupBytes, groupBytes)
		r.PeakRSS = append(r.PeakRSS, m.PeakRSS)
		r.CPU = append(r.CPU, m.CPU)
	}
	return r, nil
}

func machine() string {
	host, _ := os.Hostname()
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				cpu = strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
				break
			}
		}
	}
	return fmt.Sprintf("%s, %s", host, cpu)
}
