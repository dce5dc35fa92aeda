package soak

// The fleet: the emulator, the catalog, icekeeper's three functions and
// the tables with their workloads.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/icekeeper/icekeeper/shared/awsclients"
	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/expire"
	"github.com/icekeeper/icekeeper/shared/harness/awsrequests"
	"github.com/icekeeper/icekeeper/shared/harness/bench"
	"github.com/icekeeper/icekeeper/shared/harness/catalogcalls"
	"github.com/icekeeper/icekeeper/shared/harness/churn"
	"github.com/icekeeper/icekeeper/shared/harness/localcloud"
	"github.com/icekeeper/icekeeper/shared/harness/localrun"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/harness/stages"
	"github.com/icekeeper/icekeeper/shared/metrics"
	"github.com/icekeeper/icekeeper/shared/optin"
	plannerstage "github.com/icekeeper/icekeeper/shared/stage/planner"
	"github.com/icekeeper/icekeeper/shared/wakeup"
)

// Workload is what a table's writer does.
type Workload string

// The workloads.
const (
	// Stream appends a micro-batch every StreamEvery.
	Stream Workload = "stream"
	// CDC upserts every CDCEvery: appends and equality deletes of
	// earlier rows.
	CDC Workload = "cdc"
	// Merge is a Spark-style MERGE every MergeEvery: appends and
	// merge-on-read deletes (position deletes on v2, deletion vectors on
	// v3).
	Merge Workload = "merge"
	// Overwrite appends every OverwriteEvery, and every other commit
	// replaces a whole region's rows.
	Overwrite Workload = "overwrite"
	// Idle: nobody writes.
	Idle Workload = "idle"
)

var workloads = []Workload{Stream, CDC, Merge, Overwrite, Idle}

// tableState is one table of the fleet.
type tableState struct {
	Name     string   `json:"table"`
	Version  int      `json:"format_version"`
	Parts    int      `json:"partitions"`
	Workload Workload `json:"workload"`
	Queried  bool     `json:"queried"`
	ident    table.Identifier
	twin     table.Identifier
	sample   sampletable.Options
	writer   *churn.Writer
	seen     seenFiles
}

type fleet struct {
	o       Options
	clk     clock
	cloud   *localcloud.Cloud
	counter *awsrequests.Proxy
	cat     catalog.Catalog
	// calls counts the functions' catalog calls (the writers' are not).
	calls   *catalogcalls.Counter
	deps    *stages.Deps
	st      localrun.Stages
	planner plannerstage.Handler
	tables  []*tableState
	byName  map[string]*tableState
	// events are the planner's asynchronous invocations.
	events chan []byte
	emf    *emfSink
	logs   *bench.LogCounter
	inv    invocations
	jobsMu sync.Mutex
	jobIDs map[string]string // job id -> table
	// pending counts the events sent and not yet handled.
	pending atomic.Int64
	samples []Sample
	res     localcloud.Resources
	// wakeups fires the planner's expiry wake-ups (nil: off).
	wakeups *schedules
	// triggersStopped is when the sweeps, events and wake-ups stopped
	// (zero while they run). What retention keeps is judged as of then:
	// no expiry may run after it, so the time the run then spends
	// settling (jobs in flight committing) does not age snapshots that
	// the deployment, still running, would have expired on time.
	triggersStopped time.Time
}

// ruleRate is the stack's sweep schedule, as the planner's rule invokes it.
const scheduledEvent = `{"version":"0","id":"soak-sweep-%d","detail-type":"Scheduled Event","source":"aws.events","account":"123456789012","time":"%s","region":"us-east-1","resources":["arn:aws:events:us-east-1:123456789012:rule/icekeeper-sweep"],"detail":{}}`

func newFleet(ctx context.Context, o Options) (*fleet, error) {
	f := &fleet{o: o, byName: map[string]*tableState{}, events: make(chan []byte, 1<<16), jobIDs: map[string]string{}, emf: &emfSink{}, logs: &bench.LogCounter{}}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	cc := catalogs.Config{Type: "sql", Name: "soak", URI: "file:" + filepath.Join(abs, "catalog.db"), Warehouse: "file://" + filepath.Join(abs, "warehouse")}
	if f.cat, err = catalogs.Open(ctx, cc, aws.Config{}); err != nil {
		return nil, err
	}
	f.cloud = localcloud.Start()
	// Every request icekeeper's functions send goes through the counter.
	if f.counter, err = awsrequests.Start(f.cloud.URL); err != nil {
		f.close()
		return nil, err
	}
	clients := awsclients.ForEndpoint(f.counter.URL, "us-east-1", localcloud.PlainRequestBodies)

	cfg := config.Defaults()
	cfg.Catalog = cc
	cfg.Mode = config.ModeActive
	var grants []string
	for n := range o.Namespaces {
		grants = append(grants, namespace(n))
	}
	cfg.Grants = strings.Join(grants, ",")
	// Cooldowns scaled with everything else. The lease's TTL and the
	// committer's takeover are not: they bound how long work may take,
	// and the work is not scaled (a job takes the wall time it takes).
	cfg.MinInterval = o.wall(CompactionPeriod)
	if cfg.LedgerBackOff > 0 {
		cfg.LedgerBackOff = o.wall(cfg.LedgerBackOff)
	}
	res, err := localcloud.Provision(ctx, f.cloud.Clients, "soak", "", cfg.MaxTaskAttempts)
	if err != nil {
		f.close()
		return nil, err
	}
	res.Apply(&cfg)
	f.res = res
	if !o.NoWakeUps {
		cfg.WakeUpGroup, cfg.WakeUpRoleARN, cfg.EventBusARN = wakeUpGroup, wakeUpRoleARN, wakeUpBusARN
		admin := scheduler.NewFromConfig(f.cloud.Clients.Config)
		if _, err := admin.CreateScheduleGroup(ctx, &scheduler.CreateScheduleGroupInput{Name: aws.String(wakeUpGroup)}); err != nil {
			f.close()
			return nil, fmt.Errorf("soak: the wake-ups' schedule group: %w", err)
		}
		f.wakeups = &schedules{next: scheduler.NewFromConfig(clients.Config), admin: admin, f: f}
	}
	var logTo io.Writer = f.logs
	if o.Logs != nil {
		logTo = io.MultiWriter(f.logs, o.Logs)
	}
	log := slog.New(slog.NewJSONHandler(logTo, nil))
	if f.deps, err = stages.NewDeps(cfg, clients, log, stages.AllNeeds...); err != nil {
		f.close()
		return nil, err
	}
	f.deps.Metrics = metrics.NewEmitter(io2(f.emf, f.logs), metrics.DefaultNamespace, time.Now)
	// The committer's continuation events reach the planner, as the
	// stack's rule routes them.
	f.deps.Events = &bus{next: clients.Events, f: f}
	if f.wakeups != nil {
		f.deps.WakeUps = plannerstage.WakeUpOptions{Schedules: f.wakeups, Lead: o.wall(wakeup.DefaultLead)}
	}
	f.calls = catalogcalls.Wrap(f.cat)
	if f.st, _, err = f.deps.LocalStages(f.calls); err != nil {
		f.close()
		return nil, err
	}
	disp, err := f.deps.Dispatcher(f.calls)
	if err != nil {
		f.close()
		return nil, err
	}
	f.planner = plannerstage.Handler{Dispatch: disp, Metrics: f.deps.Metrics, Log: log}
	if err := f.createTables(ctx); err != nil {
		f.close()
		return nil, err
	}
	return f, nil
}

func namespace(n int) string { return fmt.Sprintf("soak_%c", 'a'+n%26) }

// tableProperties are the properties every maintained table carries: the
// owner's key, and the cooldowns and retention scaled. Compaction's
// cooldown is the deployment's (cfg.MinInterval, scaled), not a table
// property: an owner's own icekeeper.compaction.min-interval turns the
// pacing of busy tables off (package pacing), and the fleet's owners set
// none unless Options.TableProperties does.
func (o Options) tableProperties() map[string]string {
	props := map[string]string{
		optin.PropertyEnabled:                     "true",
		optin.PropertyExpireMinInterval:           o.wall(ExpirePeriod).String(),
		optin.PropertyRewriteManifestsMinInterval: o.wall(ManifestsPeriod).String(),
		optin.PropertyRewriteDeletesMinInterval:   o.wall(DeletesPeriod).String(),
		expire.MaxSnapshotAgeMsKey:                strconv.FormatInt(o.wall(Retention).Milliseconds(), 10),
		"write.target-file-size-bytes":            strconv.Itoa(TargetFileSize),
	}
	maps.Copy(props, o.TableProperties)
	return props
}

// createTables creates the fleet: table i has namespace i mod Namespaces,
// format v2 or v3 and 0 or 4 partitions as the seed draws, and a workload
// and whether it is queried drawn the same way (every workload and both
// versions appear once the fleet has ten tables).
func (f *fleet) createTables(ctx context.Context) error {
	rng := rand.New(rand.NewPCG(f.o.Seed, 0x50a4))
	for _, ns := range append(strings.Split(f.deps.Config.Grants, ","), "soak_twins") {
		if err := f.cat.CreateNamespace(ctx, table.Identifier{ns}, nil); err != nil {
			return fmt.Errorf("soak: namespace %s: %w", ns, err)
		}
	}
	for i := range f.o.Tables {
		t := &tableState{Version: 2 + i%2, Workload: workloads[(i/2)%len(workloads)]}
		if rng.IntN(2) == 0 {
			t.Parts = 4
		}
		t.Queried = rng.IntN(3) == 0
		name := fmt.Sprintf("t%03d_%s_v%d", i, t.Workload, t.Version)
		t.ident = table.Identifier{namespace(i % f.o.Namespaces), name}
		t.twin = table.Identifier{"soak_twins", name}
		t.Name = strings.Join(t.ident, ".")
		t.sample = sampletable.Options{FormatVersion: t.Version, Partitions: t.Parts, Files: sampleFiles, RowsPerFile: sampleRowsPerFile, Properties: f.o.tableProperties()}
		if _, err := sampletable.Create(ctx, f.cat, t.ident, t.sample); err != nil {
			return fmt.Errorf("soak: create %s: %w", t.Name, err)
		}
		twin := t.sample
		twin.Properties = nil
		if _, err := sampletable.Create(ctx, f.cat, t.twin, twin); err != nil {
			return fmt.Errorf("soak: create twin of %s: %w", t.Name, err)
		}
		f.tables = append(f.tables, t)
		f.byName[t.Name] = t
	}
	return nil
}

// A table starts with sampleFiles appends of sampleRowsPerFile rows a
// partition: files of about 12 KB (3 bytes a row), between a fifth and
// three quarters of the 32 KiB target, the files iceberg-go's planner
// alone never compacted (it bin-packs a partition's candidates into groups
// of at most the target size and drops groups of fewer than
// min-input-files, 5, files) and Iceberg Java's enough-content rule does
// (binpack.planInto): the four of a partition, 48 KB together, are one
// group. Its writer appends appendRows rows a partition a commit: files of
// about 2 KB, small.
const (
	sampleFiles       = 4
	sampleRowsPerFile = 4000
	appendRows        = 500
)

// writerOptions are table t's writer's.
func (f *fleet) writerOptions(i int, t *tableState) (churn.Options, bool) {
	parts := max(t.Parts, 1)
	o := churn.Options{
		Partitions: parts, AppendPerPartition: appendRows,
		SampleRows: int64(parts * sampleFiles * sampleRowsPerFile),
		// Aligned to whole appends, so that an id's region is
		// sampletable.RegionOf's.
		FirstID: int64(parts*appendRows) * 1000,
		Seed:    f.o.Seed*1000 + uint64(i),
	}
	var every time.Duration
	switch t.Workload {
	case Stream:
		every = StreamEvery
	case CDC:
		every, o.Deletes, o.Equality = CDCEvery, 20, true
		if t.Parts > 0 {
			sample, appended := sampletable.RegionOf(t.Parts, sampleRowsPerFile), sampletable.RegionOf(t.Parts, appendRows)
			o.RegionOf = func(id int64) string {
				if id < o.SampleRows {
					return sample(id)
				}
				return appended(id)
			}
		}
	case Merge:
		every, o.Deletes = MergeEvery, 40
	case Overwrite:
		every, o.OverwriteEvery = OverwriteEvery, 2
	default:
		return o, false
	}
	o.Interval = f.o.wall(every)
	// Spread the writers over their interval.
	o.Delay = time.Duration(float64(o.Interval) * float64(i%17) / 17)
	return o, true
}

func (f *fleet) close() {
	if f.counter != nil {
		_ = f.counter.Close()
	}
	if f.cloud != nil {
		f.cloud.Close()
	}
}
