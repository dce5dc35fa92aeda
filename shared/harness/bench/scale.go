package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/localcloud"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/harness/stages"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/metrics"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// ScalePoint is one measured planner or committer run.
type ScalePoint struct {
	Stage string `json:"stage"`
	// TableFiles are the synthetic table's live data files; Files are the
	// job's input files (what the planner put in the job, what the
	// committer replaced), at most ICEKEEPER_MAX_JOB_FILES.
	TableFiles int           `json:"table_files"`
	Files      int           `json:"files"`
	Groups     int           `json:"groups"`
	Wall       time.Duration `json:"wall_ns"`
	CPU        time.Duration `json:"cpu_ns"`
	PeakRSS    int64         `json:"peak_rss_bytes"`
	Setup      time.Duration `json:"setup_ns"`
}

// syntheticTable creates an unpartitioned table whose manifests list n data
// files of 1 MB that do not exist: planning and committing read only
// manifests, so this measures them at scale without writing n files.
func syntheticTable(ctx context.Context, cat catalog.Catalog, ident table.Identifier, n int) (*table.Table, error) {
	if err := cat.CreateNamespace(ctx, catalog.NamespaceFromIdent(ident), nil); err != nil && !strings.Contains(err.Error(), "exists") {
		return nil, err
	}
	// Opted in, as a table the planner function visits.
	tbl, err := cat.CreateTable(ctx, ident, sampletable.Schema(), catalog.WithProperties(iceberg.Properties{"format-version": "2", optin.PropertyEnabled: "true"}))
	if err != nil {
		return nil, err
	}
	// The manifests are written directly, 100,000 files each, and
	// committed as one append snapshot: appending them through
	// transactions made each commit hold more of the table than the last
	// (quadratic, 15 GB at 2 million files of 10 million), which is the
	// bench's cost, not the planner's.
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	wfs, ok := fs.(iceio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("synthetic table: %T cannot write", fs)
	}
	loc := strings.TrimSuffix(tbl.Location(), "/")
	snapID := time.Now().UnixNano() & math.MaxInt64
	const batch = 100_000
	var manifests []iceberg.ManifestFile
	for start := 0; start < n; start += batch {
		path := fmt.Sprintf("%s/metadata/synthetic-%d-m%05d.avro", loc, snapID, start/batch)
		mf, err := writeSyntheticManifest(wfs, path, tbl.Schema(), snapID, loc+"/data/", start, min(start+batch, n))
		if err != nil {
			return nil, err
		}
		manifests = append(manifests, mf)
	}
	list := fmt.Sprintf("%s/metadata/snap-%d-synthetic.avro", loc, snapID)
	out, err := wfs.Create(list)
	if err != nil {
		return nil, err
	}
	seq := int64(1)
	if err := iceberg.WriteManifestList(2, out, snapID, nil, &seq, 0, manifests); err != nil {
		_ = out.Close()
		return nil, err
	}
	if err := out.Close(); err != nil {
		return nil, err
	}
	schemaID := tbl.Schema().ID
	snap := table.Snapshot{
		SnapshotID: snapID, SequenceNumber: seq, TimestampMs: time.Now().UnixMilli(), ManifestList: list, SchemaID: &schemaID,
		Summary: &table.Summary{Operation: table.OpAppend, Properties: iceberg.Properties{
			"added-data-files": strconv.Itoa(n), "total-data-files": strconv.Itoa(n), "added-records": strconv.Itoa(n * 10_000), "total-records": strconv.Itoa(n * 10_000),
			"added-files-size": strconv.Itoa(n << 20), "total-files-size": strconv.Itoa(n << 20), "total-delete-files": "0", "total-position-deletes": "0", "total-equality-deletes": "0",
		}},
	}
	if _, _, err := cat.CommitTable(ctx, ident, []table.Requirement{table.AssertRefSnapshotID(table.MainBranch, nil)},
		[]table.Update{table.NewAddSnapshotUpdate(&snap), table.NewSetSnapshotRefUpdate(table.MainBranch, snapID, table.BranchRef, -1, -1, -1)}); err != nil {
		return nil, fmt.Errorf("commit synthetic snapshot: %w", err)
	}
	return cat.LoadTable(ctx, ident)
}

// writeSyntheticManifest writes the manifest of synthetic files
// [from, to): 1 MiB and 10,000 rows each, with the sample table's column
// statistics.
func writeSyntheticManifest(wfs iceio.WriteFileIO, path string, schema *iceberg.Schema, snapID int64, dataDir string, from, to int) (iceberg.ManifestFile, error) {
	out, err := wfs.Create(path)
	if err != nil {
		return nil, err
	}
	cw := &countingWriter{w: out}
	w, err := iceberg.NewManifestWriter(2, cw, *iceberg.UnpartitionedSpec, schema, snapID)
	if err != nil {
		_ = out.Close()
		return nil, err
	}
	for i := from; i < to; i++ {
		b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData,
			fmt.Sprintf("%ssynthetic-%08d.parquet", dataDir, i), iceberg.ParquetFile, nil, nil, nil, 10_000, 1<<20)
		if err != nil {
			_ = out.Close()
			return nil, err
		}
		if err := w.Add(iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &snapID, nil, nil, withColumnStats(b, i).Build())); err != nil {
			_ = out.Close()
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		_ = out.Close()
		return nil, err
	}
	if err := out.Close(); err != nil {
		return nil, err
	}
	return w.ToManifestFile(path, cw.n)
}

func withColumnStats(b *iceberg.DataFileBuilder, i int) *iceberg.DataFileBuilder {
	le := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	return b.ColumnSizes(map[int]int64{1: 80_000, 2: 20_000, 3: 80_000, 4: 860_000}).
		ValueCounts(map[int]int64{1: 10_000, 2: 10_000, 3: 10_000, 4: 10_000}).
		NullValueCounts(map[int]int64{1: 0, 2: 0, 3: 120, 4: 0}).
		NaNValueCounts(map[int]int64{3: 0}).
		LowerBoundValues(map[int][]byte{1: le(uint64(i) * 10_000), 2: []byte("region-00"), 3: le(math.Float64bits(0.01)), 4: []byte("note 0000000000 ")}).
		UpperBoundValues(map[int][]byte{1: le(uint64(i)*10_000 + 9_999), 2: []byte("region-07"), 3: le(math.Float64bits(999.99)), 4: []byte("note 9999999999!")})
}

// coordinatorEnv is env with the planner's and committer's function
// memory (Options.CoordinatorMemoryMB).
func coordinatorEnv(o Options, env []string) []string {
	if o.CoordinatorMemoryMB > 0 {
		env = append(slices.Clip(env), "AWS_LAMBDA_FUNCTION_MEMORY_SIZE="+strconv.Itoa(o.CoordinatorMemoryMB))
	}
	return env
}

// pipelineEnv provisions fresh pipeline resources and returns the
// dependencies and the environment a child stage needs.
func pipelineEnv(ctx context.Context, cc catalogs.Config, cloud *localcloud.Cloud, grant string) (*stages.Deps, []string, error) {
	cfg := config.Defaults()
	cfg.Catalog = cc
	cfg.LeaseTTL = time.Hour
	cfg.Mode, cfg.Grants = config.ModeActive, grant
	res, err := cloud.Provision(ctx, "scale", "", cfg.MaxTaskAttempts)
	if err != nil {
		return nil, nil, err
	}
	res.Apply(&cfg)
	deps, err := stages.NewDeps(cfg, cloud.Clients, slog.New(slog.NewJSONHandler(io.Discard, nil)), stages.AllNeeds...)
	if err != nil {
		return nil, nil, err
	}
	deps.Metrics = metrics.NewEmitter(io.Discard, "", nil)
	env := []string{"AWS_ENDPOINT_URL=" + cloud.URL, "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test"}
	for k, v := range cfg.Env() {
		env = append(env, k+"="+v)
	}
	return deps, env, nil
}

// RunScale measures the planner on tables of each size in plannerFiles and
// the committer on one job replacing commitFiles files.
func RunScale(ctx context.Context, o Options, plannerFiles []int, commitFiles int) ([]ScalePoint, error) {
	o.defaults()
	cat, cc, err := openCatalog(ctx, filepath.Join(o.Dir, "scale"))
	if err != nil {
		return nil, err
	}
	cloud, err := localcloud.Listen("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer cloud.Close()
	var out []ScalePoint
	for _, n := range plannerFiles {
		name := fmt.Sprintf("scale.plan_%d", n)
		o.progress("planner at scale: writing manifests of %d files", n)
		start := time.Now()
		if _, err := syntheticTable(ctx, cat, strings.Split(name, "."), n); err != nil {
			return out, err
		}
		setup := time.Since(start)
		_, env, err := pipelineEnv(ctx, cc, cloud, "scale")
		if err != nil {
			return out, err
		}
		o.progress("planner at scale: planning %d files", n)
		p, err := runChild(ctx, o.Self, coordinatorEnv(o, env), "plan", PlanArgs{Table: name})
		if err != nil {
			return out, err
		}
		var res plan.Result
		if err := decodeOut(p, &res); err != nil {
			return out, err
		}
		out = append(out, ScalePoint{Stage: "planner", TableFiles: n, Files: int(res.InputFiles), Groups: res.Groups, Wall: p.Wall, CPU: p.CPU, PeakRSS: p.PeakRSS, Setup: setup})
	}
	if commitFiles > 0 {
		pt, err := commitAtScale(ctx, o, cat, cc, cloud, commitFiles)
		if err != nil {
			return out, err
		}
		out = append(out, pt)
	}
	return out, nil
}

// commitAtScale plans a job over n synthetic files, stands in for the
// rewriters (one synthetic output file and a descriptor per group, claimed
// as a rewriter would), and measures the committer validating and
// committing the job in a child process.
func commitAtScale(ctx context.Context, o Options, cat catalog.Catalog, cc catalogs.Config, cloud *localcloud.Cloud, n int) (ScalePoint, error) {
	name := fmt.Sprintf("scale.commit_%d", n)
	o.progress("committer at scale: a job replacing %d files", n)
	start := time.Now()
	tbl, err := syntheticTable(ctx, cat, strings.Split(name, "."), n)
	if err != nil {
		return ScalePoint{}, err
	}
	deps, env, err := pipelineEnv(ctx, cc, cloud, "scale")
	if err != nil {
		return ScalePoint{}, err
	}
	p, err := deps.Planner(cat)
	if err != nil {
		return ScalePoint{}, err
	}
	res, err := p.PlanTable(ctx, name, "bench")
	if err != nil || res.JobID == "" {
		return ScalePoint{}, fmt.Errorf("plan %s: %v %+v", name, err, res)
	}
	job, err := deps.Jobs.Get(ctx, res.JobID)
	if err != nil {
		return ScalePoint{}, err
	}
	raw, err := deps.Blobs.Get(ctx, job.PlanKey)
	if err != nil {
		return ScalePoint{}, err
	}
	var pl messages.Plan
	if err := messages.Decode(raw, &pl); err != nil {
		return ScalePoint{}, err
	}
	dataDir := strings.TrimSuffix(tbl.Location(), "/") + "/data/"
	for _, g := range pl.Groups {
		attempt := uuid.NewString()
		b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData,
			fmt.Sprintf("%s00000-0-%s-00001.parquet", dataDir, attempt), iceberg.ParquetFile, nil, nil, nil, g.InputRows, g.InputBytes)
		if err != nil {
			return ScalePoint{}, err
		}
		enc, err := messages.EncodeDataFiles(tbl.Metadata(), []iceberg.DataFile{b.Build()})
		if err != nil {
			return ScalePoint{}, err
		}
		d := messages.Descriptor{Version: messages.FormatVersion, JobID: job.ID, Group: g.Index, Attempt: attempt, SpecID: g.SpecID,
			InputPaths: g.InputPaths, NewFiles: enc,
			Counters: messages.Counters{RowsBeforeDeletes: g.InputRows, RowsScanned: g.InputRows, RowsWritten: g.InputRows, FilesIn: len(g.InputPaths), FilesOut: 1, BytesIn: g.InputBytes, BytesOut: g.InputBytes}}
		body, err := messages.Encode(d)
		if err != nil {
			return ScalePoint{}, err
		}
		key, err := deps.Blobs.Put(ctx, fmt.Sprintf("jobs/%s/descriptors/%05d-%s.json", job.ID, g.Index, attempt), body)
		if err != nil {
			return ScalePoint{}, err
		}
		if err := deps.Jobs.RegisterAttempt(ctx, job.ID, job.Token, g.Index, attempt); err != nil {
			return ScalePoint{}, err
		}
		if err := deps.Jobs.Claim(ctx, job.ID, job.Token, g.Index, attempt, key, g.InputRows); err != nil {
			return ScalePoint{}, err
		}
	}
	req, _ := messages.Encode(messages.CommitJob(job.ID))
	if err := deps.Commits.Send(ctx, string(req)); err != nil {
		return ScalePoint{}, err
	}
	setup := time.Since(start)
	pr, err := runChild(ctx, o.Self, coordinatorEnv(o, env), "commit", struct{}{})
	if err != nil {
		return ScalePoint{}, err
	}
	j, err := deps.Jobs.Get(ctx, job.ID)
	if err != nil {
		return ScalePoint{}, err
	}
	if j.State != "committed" {
		return ScalePoint{}, fmt.Errorf("scale commit: job %s (%s)", j.State, j.Reason)
	}
	return ScalePoint{Stage: "committer", TableFiles: n, Files: int(job.InputFiles), Groups: job.Groups, Wall: pr.Wall, CPU: pr.CPU, PeakRSS: pr.PeakRSS, Setup: setup}, nil
}

// PlanArgs are the planner child's arguments.
type PlanArgs struct {
	Table string `json:"table"`
}
