package tests

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/bounds"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/exchange"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/plan"
	"github.com/icekeeper/icekeeper/shared/pruning"
)

// sortByID makes id (ascending, nulls first) the table's sort order.
func (e *env) sortByID() {
	e.t.Helper()
	if _, err := sampletable.SortBy(e.ctx, e.load(), "id"); err != nil {
		e.t.Fatal(err)
	}
}

// appendIDs appends one file holding the ids, in the sample schema.
// (iceberg-go's writer sorts each batch by the table's sort order, so a
// file is sorted within itself; files still overlap one another.)
func (e *env) appendIDs(ids []int64) {
	e.t.Helper()
	e.appendSampleRows(ids, func(i int) float64 { return float64(ids[i]) / 4 }, func(i int) string {
		return "note-" + strconv.FormatInt(ids[i]*7919%1000, 10)
	})
}

// appendSampleRows appends one file of sample rows: the ids, amount(i)
// and note(i) (nil: null notes), all in region 0.
func (e *env) appendSampleRows(ids []int64, amount func(int) float64, note func(int) string) {
	e.t.Helper()
	tbl := e.load()
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		e.t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(sampletable.Region(0))
		b.Field(2).(*array.Float64Builder).Append(amount(i))
		if note == nil {
			b.Field(3).AppendNull()
		} else {
			b.Field(3).(*array.StringBuilder).Append(note(i))
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	rdr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
	if err != nil {
		e.t.Fatal(err)
	}
	defer rdr.Release()
	if _, err := tbl.Append(e.ctx, rdr, nil); err != nil {
		e.t.Fatalf("append: %v", err)
	}
}

// fileIDs reads a data file's ids in file order (deletes not applied).
func (e *env) fileIDs(task table.FileScanTask) []int64 {
	e.t.Helper()
	task.DeleteFiles, task.EqualityDeleteFiles, task.DeletionVectorFiles = nil, nil, nil
	_, recs, err := e.load().Scan(table.WithSelectedFields("id")).ReadTasks(e.ctx, []table.FileScanTask{task})
	if err != nil {
		e.t.Fatal(err)
	}
	var ids []int64
	for rec, err := range recs {
		if err != nil {
			e.t.Fatal(err)
		}
		col := rec.Column(0).(*array.Int64)
		for i := range col.Len() {
			ids = append(ids, col.Value(i))
		}
		rec.Release()
	}
	return ids
}

// sortedLayout checks every live file written by job is sorted by id, and
// that no two of them overlap; it returns the job's files' [lo, hi].
func (e *env) sortedLayout(jobID string) [][2]int64 {
	e.t.Helper()
	var spans [][2]int64
	for _, task := range e.liveTasks() {
		if !slices.Contains(e.jobFilesOnDisk(jobID), strings.TrimPrefix(task.File.FilePath(), "file://")) {
			continue
		}
		ids := e.fileIDs(task)
		if !slices.IsSorted(ids) {
			e.t.Fatalf("%s is not sorted by id", task.File.FilePath())
		}
		spans = append(spans, [2]int64{ids[0], ids[len(ids)-1]})
	}
	slices.SortFunc(spans, func(a, b [2]int64) int { return int(a[0] - b[0]) })
	for i := 1; i < len(spans); i++ {
		if spans[i][0] <= spans[i-1][1] {
			e.t.Fatalf("the job's files overlap: %v then %v (all: %v)", spans[i-1], spans[i], spans)
		}
	}
	return spans
}

// overlappingClusters appends clusters of files: cluster k's files each
// hold a shuffled sample of ids k*1000 .. k*1000+999, so they overlap
// one another and no file of another cluster. It returns the ids.
func (e *env) overlappingClusters(r *rand.Rand, clusters, filesPer, rowsPer int) {
	e.t.Helper()
	for k := range clusters {
		perm := r.Perm(1000)
		for f := range filesPer {
			ids := make([]int64, rowsPer)
			for i := range ids {
				ids[i] = int64(k*1000 + perm[f*rowsPer+i])
			}
			e.appendIDs(ids)
		}
	}
}

// TestSort_OverlappingFilesAreRewrittenSortedAndDisjoint: four clusters of
// overlapping, unsorted files in one partition are planned as four
// groups (four rewriters); each new file is sorted by id and no two new
// files overlap; a lone file that overlaps nothing is left alone; rows,
// including the deletes applied, are unchanged.
func TestSort_OverlappingFilesAreRewrittenSortedAndDisjoint(t *testing.T) {
	for _, version := range []int{2, 3} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			e := setup(t)
			e.createTable(sampletable.Options{FormatVersion: version, Properties: map[string]string{optin.PropertyCompactionStrategy: "sort"}})
			e.sortByID()
			r := rand.New(rand.NewPCG(uint64(version), 9))
			e.overlappingClusters(r, 4, 3, 300)
			e.appendIDs([]int64{9003, 9001, 9002}) // overlaps nothing
			lone := e.liveTasks()
			// Deletes on every cluster: position deletes (v2) or
			// deletion vectors (v3), applied by the rewrite.
			if _, err := sampletable.DeleteByPosition(e.ctx, e.load(), []int64{5, 1007, 2500, 3999}); err != nil {
				t.Fatal(err)
			}
			// Groups of about one cluster: the target is a little above a
			// cluster's three files.
			var clusterBytes int64
			for _, task := range lone[:3] {
				clusterBytes += task.File.FileSizeBytes()
			}
			e.setProperties(iceberg.Properties{table.WriteTargetFileSizeBytesKey: strconv.FormatInt(clusterBytes*4/3, 10)})
			before := e.fingerprint()

			res := e.plan()
			if res.Outcome != plan.OutcomePlanned || res.Strategy != optin.StrategySort {
				t.Fatalf("plan: %s %s (%s)", res.Outcome, res.Strategy, res.Reason)
			}
			if res.Groups != 4 || res.InputFiles != 12 {
				t.Fatalf("%d groups of %d files, want 4 groups of the 12 clustered files", res.Groups, res.InputFiles)
			}
			e.drainTasks()
			e.drainCommits()
			e.requireCommitted(res.JobID, before)
			spans := e.sortedLayout(res.JobID)
			if len(spans) < 4 {
				t.Fatalf("%d new files, want at least one per cluster", len(spans))
			}
			var loneLive bool
			for _, task := range e.liveTasks() {
				if ids := e.fileIDs(task); len(ids) == 3 && ids[0] == 9001 {
					loneLive = true
				}
			}
			if !loneLive {
				t.Error("the lone file that overlapped nothing was rewritten")
			}
			// A second run finds the layout sorted: nothing to do.
			if again := e.plan(); again.Outcome != plan.OutcomeNothingToDo {
				t.Fatalf("second plan %s (%d groups): a sorted table was planned again", again.Outcome, again.Groups)
			}
		})
	}
}

// TestSort_AGroupLargerThanTheSortWindowIsMergedFromSpilledRuns: with a
// sort window far smaller than a group, the rewriter sorts runs, spills
// them and merges them; the files are as sorted and the rows the same.
func TestSort_AGroupLargerThanTheSortWindowIsMergedFromSpilledRuns(t *testing.T) {
	e := setup(t, func(c *config.Config) { c.SortWindowBytes = 16 << 10 })
	e.createTable(sampletable.Options{FormatVersion: 2})
	e.sortByID()
	e.overlappingClusters(rand.New(rand.NewPCG(5, 6)), 1, 4, 250)
	before := e.fingerprint()

	res, err := e.planner.PlanLayout(asFunction(e.ctx, "Planner"), e.name(), "test", plan.Layout{Strategy: optin.StrategySort})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != plan.OutcomePlanned || res.Groups != 1 {
		t.Fatalf("plan: %s, %d groups (%s)", res.Outcome, res.Groups, res.Reason)
	}
	e.drainTasks()
	e.drainCommits()
	e.requireCommitted(res.JobID, before)
	e.sortedLayout(res.JobID)
	if d := e.descriptors(res.JobID); len(d) != 1 || d[0].Counters.SortRuns < 2 || d[0].Counters.SpilledBytes == 0 {
		t.Fatalf("descriptors %+v: want one group merged from spilled runs", d)
	}
}

// TestSort_ATableWithoutASortOrderFailsLoud: strategy sort on a table
// with no sort order is the owner's mistake: planning fails with a bad
// property, which counts towards the backoff, and nothing is rewritten.
func TestSort_ATableWithoutASortOrderFailsLoud(t *testing.T) {
	e := setup(t)
	e.createTable(sampletable.Options{FormatVersion: 2, Files: 6, RowsPerFile: 50, Properties: map[string]string{optin.PropertyCompactionStrategy: "sort"}})
	before := e.fingerprint()
	_, err := e.planner.PlanTable(asFunction(e.ctx, "Planner"), e.name(), "test")
	if !errors.Is(err, optin.ErrBadProperty) {
		t.Fatalf("plan error %v, want a bad property", err)
	}
	if after := e.fingerprint(); after != before {
		t.Fatal("rows changed")
	}
	if n := len(e.dataFilesOnDisk()); n != 6 {
		t.Fatalf("%d data files on disk, want the 6 appended", n)
	}
}

// TestZOrder_NewFilesEachCoverABoxOfBothColumns: a 1024 x 1024 grid of
// (id, amount) points, shuffled over four files that each span the whole
// grid, z-ordered on both columns (id an int, amount a float: their raw
// keys vary in different bits), comes out as files that each cover a box
// narrow on both columns (where a sort on either alone gives full-width
// strips; mutation-checked by dropping zorder.Norm); rows are unchanged; the table's own z-order
// strategy then finds nothing to do (no file to compact), and a column
// not in the table fails loud.
func TestZOrder_NewFilesEachCoverABoxOfBothColumns(t *testing.T) {
	e := setup(t)
	const side = 1024
	total := e.shuffledGrid(side, 4, 7)
	e.setProperties(iceberg.Properties{
		table.WriteTargetFileSizeBytesKey: strconv.FormatInt(total/256, 10), // below one 64K-row batch of z-ordered rows: a file per batch, 1/16 of the curve
		// Row groups small enough that the writer sees its file grow and
		// rolls at the target.
		table.ParquetRowGroupLimitKey:    "16384",
		optin.PropertyCompactionStrategy: string(optin.StrategyZOrder),
		optin.PropertyZOrderColumns:      "id,amount",
	})
	before := e.fingerprint()

	res, err := e.planner.PlanLayout(asFunction(e.ctx, "Planner"), e.name(), "test", plan.Layout{Strategy: optin.StrategyZOrder, ZOrderColumns: []string{"id", "amount"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != plan.OutcomePlanned || res.InputFiles != 4 {
		t.Fatalf("plan: %s, %d files (%s)", res.Outcome, res.InputFiles, res.Reason)
	}
	e.drainTasks()
	e.drainCommits()
	e.requireCommitted(res.JobID, before)
	live := e.liveTasks()
	if len(live) < 3 {
		t.Fatalf("%d files after: the test needs several", len(live))
	}
	for _, task := range live {
		lo, hi := task.File.LowerBoundValues(), task.File.UpperBoundValues()
		idSpan := int64(binary.LittleEndian.Uint64(hi[1])) - int64(binary.LittleEndian.Uint64(lo[1])) + 1
		amountSpan := math.Float64frombits(binary.LittleEndian.Uint64(hi[3])) - math.Float64frombits(binary.LittleEndian.Uint64(lo[3])) + 1
		// A sixteenth of the z-curve is a 256 x 256 box; a sort on either
		// column alone would give strips the grid's full width on the
		// other (what interleaving raw keys did: see zorder.Norm).
		if float64(idSpan) > side/2 || amountSpan > side/2 {
			t.Errorf("%s covers id %d wide, amount %v wide: want a box narrow on both", task.File.FilePath(), idSpan, amountSpan)
		}
	}
	if again := e.plan(); again.Outcome != plan.OutcomeNothingToDo {
		t.Fatalf("the table's z-order strategy planned %s (%d groups) on a clustered table with nothing to compact", again.Outcome, again.Groups)
	}

	// The owner's mistake fails loud (and backs the table off; the
	// property's own parsing is optin's tests').
	e.setProperties(iceberg.Properties{optin.PropertyZOrderColumns: "id,nope"})
	if _, err := e.planner.PlanTable(asFunction(e.ctx, "Planner"), e.name(), "test"); !errors.Is(err, optin.ErrBadProperty) {
		t.Errorf("z-order on a column not in the table: plan error %v, want a bad property", err)
	}
}

// TestPruning_SortAndZOrderCutTheFilesAQueryTouches is the pruning
// simulation: random point and range predicates on id and amount, and the
// files whose bounds let each query in (pruning.Layout.Touched), on the
// same rows three ways: shuffled (every file spans everything), sorted by
// id, z-ordered on id and amount. Sorting helps queries on id and not on
// amount; z-ordering helps both.
func TestPruning_SortAndZOrderCutTheFilesAQueryTouches(t *testing.T) {
	e := setup(t)
	// The writer rolls files between 64K-row batches: 1M rows give 16.
	const side = 1024
	total := e.shuffledGrid(side, 4, 3)
	e.setProperties(iceberg.Properties{
		table.WriteTargetFileSizeBytesKey: strconv.FormatInt(total/256, 10), // below one 64K-row batch of ordered rows: a file per batch
		table.ParquetRowGroupLimitKey:     "16384",
	})
	r := rand.New(rand.NewPCG(5, 6))
	type query struct {
		name  string
		preds []pruning.Predicate
	}
	var queries []query
	for range 100 {
		x, y := int64(r.IntN(side)), float64(r.IntN(side))
		w := int64(side / 20)
		queries = append(queries,
			query{"id =", []pruning.Predicate{{Column: "id", Lo: bounds.IntValue(x), Hi: bounds.IntValue(x)}}},
			query{"id range", []pruning.Predicate{{Column: "id", Lo: bounds.IntValue(x), Hi: bounds.IntValue(x + w)}}},
			query{"amount =", []pruning.Predicate{{Column: "amount", Lo: bounds.FloatValue(y), Hi: bounds.FloatValue(y)}}},
			query{"amount range", []pruning.Predicate{{Column: "amount", Lo: bounds.FloatValue(y), Hi: bounds.FloatValue(y + float64(w))}}},
		)
	}
	// touched is the mean share of the live files each kind of query
	// opens, and the number of live files.
	touched := func() (map[string]float64, int) {
		tbl := e.load()
		l, err := pruning.Collect(e.ctx, tbl, tbl.CurrentSnapshot(), nil)
		if err != nil {
			t.Fatal(err)
		}
		files := l.FullScan().Files
		share := map[string]float64{}
		for _, q := range queries {
			rd, err := l.Touched(q.preds...)
			if err != nil {
				t.Fatal(err)
			}
			share[q.name] += rd.Files / files / 100
		}
		return share, int(files)
	}
	compact := func(l plan.Layout) {
		t.Helper()
		before := e.fingerprint()
		res, err := e.planner.PlanLayout(asFunction(e.ctx, "Planner"), e.name(), "test", l)
		if err != nil || res.Outcome != plan.OutcomePlanned {
			t.Fatalf("plan %+v: %v, %+v", l, err, res)
		}
		e.drainTasks()
		e.drainCommits()
		e.requireCommitted(res.JobID, before)
	}

	shuffled, n := touched()
	for name, s := range shuffled {
		if s < 0.999 {
			t.Fatalf("shuffled files: %s opens %.0f%% of the %d files, want all", name, s*100, n)
		}
	}
	e.sortByID()
	compact(plan.Layout{Strategy: optin.StrategySort})
	sorted, n := touched()
	if n < 8 {
		t.Fatalf("%d files after the sort: the simulation needs several", n)
	}
	t.Logf("sorted by id, %d files: %v", n, sorted)
	if sorted["id ="] > 2.0/float64(n) || sorted["id range"] > 0.25 {
		t.Errorf("sorted by id: queries on id open %.0f%% (point) and %.0f%% (range) of %d files, want one or two files and a tenth or so", sorted["id ="]*100, sorted["id range"]*100, n)
	}
	if sorted["amount ="] < 0.9 || sorted["amount range"] < 0.9 {
		t.Errorf("sorted by id: queries on amount open %.0f%% and %.0f%%: a sort on id should not prune amount", sorted["amount ="]*100, sorted["amount range"]*100)
	}

	compact(plan.Layout{Strategy: optin.StrategyZOrder, ZOrderColumns: []string{"id", "amount"}})
	zordered, n := touched()
	t.Logf("z-ordered on id and amount, %d files: %v", n, zordered)
	for _, name := range []string{"id =", "id range", "amount =", "amount range"} {
		if zordered[name] > 0.6 {
			t.Errorf("z-ordered: %s opens %.0f%% of %d files, want well under all", name, zordered[name]*100, n)
		}
	}
	if zordered["amount ="] >= sorted["amount ="]/1.5 {
		t.Errorf("z-order does not help point queries on amount: %.0f%% vs %.0f%% sorted by id", zordered["amount ="]*100, sorted["amount ="]*100)
	}
}

// twoStageTable makes one run of overlapping files far larger than one
// rewriter's group: eight files that each hold a shuffled share of ids
// 0..7999 (every file spans them all), with deletes. It returns the
// run's bytes.
func (e *env) twoStageTable(version int) int64 {
	e.t.Helper()
	e.createTable(sampletable.Options{FormatVersion: version, Properties: map[string]string{optin.PropertyCompactionStrategy: "sort"}})
	e.sortByID()
	perm := rand.New(rand.NewPCG(uint64(version), 21)).Perm(8000)
	for f := range 8 {
		ids := make([]int64, 1000)
		for i := range ids {
			ids[i] = int64(perm[f*1000+i])
		}
		e.appendIDs(ids)
	}
	if _, err := sampletable.DeleteByPosition(e.ctx, e.load(), []int64{3, 1999, 4000, 4001, 7998}); err != nil {
		e.t.Fatal(err)
	}
	var total int64
	for _, task := range e.liveTasks() {
		total += task.File.FileSizeBytes()
	}
	return total
}

// runTwoStage drains tasks and commits until the job ends (maps, the
// exchange's hand-over, reduces, the commit).
func (e *env) runTwoStage(jobID string) {
	e.t.Helper()
	for range 6 {
		e.drainTasks()
		e.drainCommits()
		if e.job(jobID).State.Terminal() {
			return
		}
	}
	e.t.Fatalf("job %s did not end: %s", jobID, e.diagnose(jobID))
}

// TestSort_ARunLargerThanOneRewriterIsSortedInTwoStagesIntoDisjointRanges:
// a run of eight overlapping files, four times one rewriter's group
// (ICEKEEPER_MAX_GROUP_BYTES), is planned as map groups that sort and page
// their share and at least four reduce groups that each write one key
// range. Every new file is sorted, no two overlap (overlap depth 1 on id),
// the reduces' ranges are disjoint, rows and the deletes applied are
// unchanged, the scratch pages are gone, and a second plan finds nothing
// to do. On v2 (position deletes) and v3 (deletion vectors, row lineage).
func TestSort_ARunLargerThanOneRewriterIsSortedInTwoStagesIntoDisjointRanges(t *testing.T) {
	for _, version := range []int{2, 3} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			e := setup(t, func(c *config.Config) { c.ExchangePageBytes = 8 << 10 })
			total := e.twoStageTable(version)
			e.withMaxGroupBytes(total/4 + 1)
			e.setProperties(iceberg.Properties{table.WriteTargetFileSizeBytesKey: strconv.FormatInt(total/16, 10)})
			before := e.fingerprint()

			res := e.plan()
			if res.Outcome != plan.OutcomePlanned || res.OverlappingSortRuns != 0 {
				t.Fatalf("plan: %s, %d oversized runs (%s)", res.Outcome, res.OverlappingSortRuns, res.Reason)
			}
			var maps, reduces []messages.PlanGroup
			for _, pg := range e.planOf(res.JobID).Groups {
				switch {
				case pg.Exchange == nil:
					t.Fatalf("group %d is not part of the exchange", pg.Index)
				case pg.Exchange.Role == messages.ExchangeMap:
					maps = append(maps, pg)
				default:
					reduces = append(reduces, pg)
				}
			}
			if len(maps) < 4 || len(reduces) < 4 {
				t.Fatalf("%d maps and %d reduces, want at least 4 of each for a run 4 groups large", len(maps), len(reduces))
			}
			t.Logf("%d maps, %d reduces over %d bytes", len(maps), len(reduces), total)
			e.runTwoStage(res.JobID)
			e.requireCommitted(res.JobID, before)
			spans := e.sortedLayout(res.JobID)
			var wrote int
			for _, d := range e.descriptors(res.JobID) {
				if d.Exchange == nil && len(d.NewFiles) > 0 {
					wrote++
				}
			}
			t.Logf("%d reduces wrote %d files: %v", wrote, len(spans), spans)
			if wrote < 4 || len(spans) < 4 {
				t.Fatalf("%d reduces wrote %d files: want at least 4 rewriters' disjoint ranges", wrote, len(spans))
			}
			// The boundaries come from the maps' pages: each range holds
			// a fair share of the ids, not a sliver.
			for _, sp := range spans {
				if sp[1]-sp[0] < 8000/16 {
					t.Errorf("a range of ids %d..%d: the boundaries are far from even (%v)", sp[0], sp[1], spans)
				}
			}
			if left := e.blobsUnder(exchange.Prefix(res.JobID)); len(left) != 0 {
				t.Fatalf("scratch pages left after the commit: %v", left)
			}
			tbl := e.load()
			l, err := pruning.Collect(e.ctx, tbl, tbl.CurrentSnapshot(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if lookup, _ := l.PointLookup("id"); lookup.Files > 1.01 {
				t.Errorf("a point lookup on id opens %.2f files after the two-stage sort, want 1", lookup.Files)
			}
			if again := e.plan(); again.Outcome != plan.OutcomeNothingToDo {
				t.Fatalf("second plan %s (%d groups): the sorted run was planned again", again.Outcome, again.Groups)
			}
		})
	}
}

// withMaxGroupBytes rebuilds the planner with another group size limit
// (ICEKEEPER_MAX_GROUP_BYTES), for tests that size it from their table.
func (e *env) withMaxGroupBytes(n int64) {
	e.t.Helper()
	e.cfg.MaxGroupBytes = n
	e.deps.Config.MaxGroupBytes = n
	p, err := e.deps.Planner(e.cat)
	if err != nil {
		e.t.Fatal(err)
	}
	e.planner = p
}

// planOf reads a job's stored plan.
func (e *env) planOf(jobID string) messages.Plan {
	e.t.Helper()
	data, err := e.deps.Blobs.Get(e.ctx, e.job(jobID).PlanKey)
	if err != nil {
		e.t.Fatal(err)
	}
	var p messages.Plan
	if err := messages.Decode(data, &p); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// blobsUnder lists icekeeper's bucket under prefix.
func (e *env) blobsUnder(prefix string) []string {
	e.t.Helper()
	keys, err := e.deps.Blobs.List(e.ctx, prefix)
	if err != nil {
		e.t.Fatal(err)
	}
	return keys
}

// TestSort_TwoStageReducesStartedTwiceStillCommitEachRowOnce: the
// exchange's hand-over arrives twice (a redelivered request, or two maps
// ending together), so every reduce task is sent twice: the duplicates are
// dropped and each row is written once.
func TestSort_TwoStageReducesStartedTwiceStillCommitEachRowOnce(t *testing.T) {
	e := setup(t, func(c *config.Config) { c.ExchangePageBytes = 8 << 10 })
	e.withMaxGroupBytes(e.twoStageTable(2)/4 + 1)
	before := e.fingerprint()
	res := e.plan()
	if res.Outcome != plan.OutcomePlanned {
		t.Fatalf("plan: %s (%s)", res.Outcome, res.Reason)
	}
	e.drainTasks() // the maps
	again, err := messages.Encode(messages.ExchangeReady(res.JobID, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.deps.Commits.Send(e.ctx, string(again)); err != nil {
		t.Fatal(err)
	}
	if st := e.drainCommits(); st.Delivered < 2 {
		t.Fatalf("%d commit requests, want the maps' hand-over and the repeat", st.Delivered)
	}
	e.runTwoStage(res.JobID)
	e.requireCommitted(res.JobID, before)
	e.sortedLayout(res.JobID)
	if left := e.blobsUnder(exchange.Prefix(res.JobID)); len(left) != 0 {
		t.Fatalf("scratch pages left: %v", left)
	}
}

// TestSort_ATwoStageJobThatFailsLeavesNoScratchAndNoFile: a map's page
// disappears before the reduces read it, so a reduce fails on every
// delivery; the job fails, the table is unchanged, and neither scratch
// pages nor any file a reduce wrote are left.
func TestSort_ATwoStageJobThatFailsLeavesNoScratchAndNoFile(t *testing.T) {
	e := setup(t, func(c *config.Config) { c.ExchangePageBytes = 8 << 10 })
	e.withMaxGroupBytes(e.twoStageTable(2)/4 + 1)
	before := e.fingerprint()
	onDisk := e.dataFilesOnDisk()
	res := e.plan()
	if res.Outcome != plan.OutcomePlanned {
		t.Fatalf("plan: %s (%s)", res.Outcome, res.Reason)
	}
	e.drainTasks()
	pages := e.blobsUnder(exchange.Prefix(res.JobID))
	if len(pages) < 4 {
		t.Fatalf("%d scratch pages after the maps", len(pages))
	}
	if err := e.deps.Blobs.Delete(e.ctx, pages[len(pages)/2]); err != nil {
		t.Fatal(err)
	}
	e.runTwoStage(res.JobID)
	if j := e.job(res.JobID); j.State != jobs.Failed {
		t.Fatalf("job %s (%s), want failed", j.State, j.Reason)
	}
	if got := e.fingerprint(); got != before {
		t.Fatalf("rows changed: %s -> %s", before, got)
	}
	if left := e.blobsUnder(exchange.Prefix(res.JobID)); len(left) != 0 {
		t.Fatalf("scratch pages left after the failure: %v", left)
	}
	if now := e.dataFilesOnDisk(); len(now) != len(onDisk) {
		t.Fatalf("%d data files on disk, %d before: a reduce's files were left", len(now), len(onDisk))
	}
}

// TestZOrder_ARunLargerThanOneRewriterIsZOrderedInTwoStages: an operator's
// z-order of a run eight times one rewriter's group goes through the
// exchange with ranges of the z-value: every map spreads the columns over
// the whole run's range, so their z-values compare, and the reduces'
// files each cover a box: point queries on either column open well under
// all of them. Rows are unchanged and no scratch is left.
func TestZOrder_ARunLargerThanOneRewriterIsZOrderedInTwoStages(t *testing.T) {
	e := setup(t, func(c *config.Config) { c.ExchangePageBytes = 16 << 10 })
	total := e.shuffledGrid(256, 8, 11)
	e.withMaxGroupBytes(total/8 + 1) // eight reduces: a file each (the writer rolls between 64K-row batches)
	e.setProperties(iceberg.Properties{table.WriteTargetFileSizeBytesKey: strconv.FormatInt(total/64, 10), table.ParquetRowGroupLimitKey: "2048"})
	before := e.fingerprint()
	res, err := e.planner.PlanLayout(asFunction(e.ctx, "Planner"), e.name(), "test", plan.Layout{Strategy: optin.StrategyZOrder, ZOrderColumns: []string{"id", "amount"}})
	if err != nil || res.Outcome != plan.OutcomePlanned {
		t.Fatalf("plan: %v %+v", err, res)
	}
	var maps, reduces int
	for _, pg := range e.planOf(res.JobID).Groups {
		if pg.Exchange != nil && pg.Exchange.Role == messages.ExchangeMap {
			maps++
		} else if pg.Exchange != nil {
			reduces++
		}
	}
	if maps < 4 || reduces < 8 {
		t.Fatalf("%d maps and %d reduces, want 4 or more maps and 8 or more reduces", maps, reduces)
	}
	e.runTwoStage(res.JobID)
	e.requireCommitted(res.JobID, before)
	if left := e.blobsUnder(exchange.Prefix(res.JobID)); len(left) != 0 {
		t.Fatalf("scratch pages left: %v", left)
	}
	tbl := e.load()
	l, err := pruning.Collect(e.ctx, tbl, tbl.CurrentSnapshot(), nil)
	if err != nil {
		t.Fatal(err)
	}
	files := l.FullScan().Files
	for _, col := range []string{"id", "amount"} {
		lookup, _ := l.PointLookup(col)
		t.Logf("%v files; a lookup on %s opens %.1f", files, col, lookup.Files)
		if files < 8 || lookup.Files > files*0.6 {
			t.Errorf("a point lookup on %s opens %.1f of %v files: the z-order does not cluster it", col, lookup.Files, files)
		}
	}
}

// shuffledGrid makes a v2 sample table holding a side x side grid of
// points, id the x (an int) and amount the y (a float), shuffled (seed)
// over files appends that each span the whole grid; it returns the
// table's bytes.
func (e *env) shuffledGrid(side, files int, seed uint64) int64 {
	e.t.Helper()
	e.createTable(sampletable.Options{FormatVersion: 2})
	perm := rand.New(rand.NewPCG(seed, seed+1)).Perm(side * side)
	per := len(perm) / files
	for f := range files {
		var xs, ys []int64
		for _, p := range perm[f*per : (f+1)*per] {
			xs, ys = append(xs, int64(p%side)), append(ys, int64(p/side))
		}
		e.appendSampleRows(xs, func(i int) float64 { return float64(ys[i]) }, nil)
	}
	var total int64
	for _, task := range e.liveTasks() {
		total += task.File.FileSizeBytes()
	}
	return total
}

// TestZOrder_AConcurrentDeleteOnAZOrderedGroupIsNeverMisplaced: a z-order
// of a table without a sort order writes its rows in z order, not in the
// order it read them. A position delete committed on its input files
// while it runs must then not be rebased by input position (it would
// delete other rows and bring the deleted ones back): the job aborts, and
// the table holds exactly the rows the delete left.
func TestZOrder_AConcurrentDeleteOnAZOrderedGroupIsNeverMisplaced(t *testing.T) {
	e := setup(t)
	e.shuffledGrid(64, 4, 5)
	res, err := e.planner.PlanLayout(asFunction(e.ctx, "Planner"), e.name(), "test", plan.Layout{Strategy: optin.StrategyZOrder, ZOrderColumns: []string{"id", "amount"}})
	if err != nil || res.Outcome != plan.OutcomePlanned {
		t.Fatalf("plan: %v %+v", err, res)
	}
	e.drainTasks()
	if _, err := sampletable.DeleteByPosition(e.ctx, e.load(), []int64{5, 17, 40}); err != nil {
		t.Fatal(err)
	}
	want := e.fingerprint()
	e.drainCommits()
	if got := e.fingerprint(); got != want {
		j := e.job(res.JobID)
		t.Fatalf("rows after the job (%s: %s): %s, want what the concurrent delete left, %s", j.State, j.Reason, got, want)
	}
	if j := e.job(res.JobID); j.State != jobs.Aborted {
		t.Fatalf("job %s (%s), want aborted: a z-ordered group cannot be rebased", j.State, j.Reason)
	}
}
