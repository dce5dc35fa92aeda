package plan

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/icekeeper/icekeeper/shared/binpack"
	"github.com/icekeeper/icekeeper/shared/bounds"
	"github.com/icekeeper/icekeeper/shared/filescan"
	"github.com/icekeeper/icekeeper/shared/health"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/layouttrial"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/pruning"
	"github.com/icekeeper/icekeeper/shared/signals"
	"github.com/icekeeper/icekeeper/shared/throttle"
)

// planLeased does the planning under the lease. started reports whether
// any task may have been sent.
func (p *Planner) planLeased(ctx context.Context, log *slog.Logger, ident table.Identifier, name, jobID, trigger string, l lease.Lease) (res Result, started bool, err error) {
	return p.planCompaction(ctx, log, ident, name, jobID, trigger, l, Layout{}, false)
}

// planCompaction plans a compaction with the given layout (a zero Layout:
// the table's strategy). operator is true when an operator asked for the
// layout (PlanLayout).
//
// A z-order's files overlap one another on each of its columns (that is
// what interleaving does), so its runs (binpack.PlanSorted, on the first
// column) would never come out disjoint: the table's own z-order strategy
// only rewrites runs that hold a file to compact, which brings new files
// into the clustering without rewriting a clustered partition again for
// nothing; an operator's z-order rewrites every run of two or more files.
func (p *Planner) planCompaction(ctx context.Context, log *slog.Logger, ident table.Identifier, name, jobID, trigger string, l lease.Lease, layout Layout, operator bool) (res Result, started bool, err error) {
	strategy := layout.Strategy
	res = Result{Table: name}
	planStart := p.now()
	tbl, err := p.loadLeased(ctx, log, ident, name, l, &res)
	if err != nil {
		return res, false, fmt.Errorf("plan %s: %w", name, err)
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		res.Outcome, res.Reason = OutcomeNothingToDo, "table has no snapshot"
		return res, false, nil
	}
	pin := messages.Pin{MetadataLocation: tbl.MetadataLocation(), SnapshotID: snap.SnapshotID, SequenceNumber: snap.SequenceNumber}
	res.SnapshotID = pin.SnapshotID
	log = log.With("snapshot_id", pin.SnapshotID)
	now := p.now()
	// How hard this job may press on the table's writers (package
	// throttle), from what is recorded: decided before the scan, so that a
	// table backed off costs no scan planning.
	decision := p.throttle(tbl.Metadata(), l, now)
	res.Throttle = &decision
	log.Info("throttle", "start", decision.Start, "max_groups", decision.MaxGroups, "concurrency", decision.Concurrency, "level", decision.Level,
		"writer_commits", decision.WriterCommits, "removing_commits", decision.RemovingCommits, "conflict_aborts", decision.ConflictAborts, "why", decision.Reason)
	if !decision.Start {
		res.Outcome, res.Reason = OutcomeBackedOff, decision.Reason
		log.Warn("skip: the table's writers keep removing files and its last jobs were aborted by concurrent commits", "why", decision.Reason)
		return res, false, nil
	}

	cfg, rules, err := CompactionConfig(tbl.Properties(), p.settings.TargetFileSize)
	if err != nil {
		return res, false, fmt.Errorf("plan %s: %w", name, err)
	}
	if strategy == "" {
		if strategy, err = optin.CompactionStrategy(tbl.Properties()); err != nil {
			return res, false, fmt.Errorf("plan %s: %w", name, err)
		}
	}
	res.Strategy = strategy
	log = log.With("strategy", strategy)
	// binpack.Plan decides as cfg.PlanCompaction would, without copying
	// the tasks; the tasks no group holds are dropped at once (a million
	// files: see docs/PERFORMANCE.md).
	maxCommits, err := optin.PartialProgress(tbl.Properties())
	if err != nil {
		return res, false, fmt.Errorf("plan %s: %w", name, err)
	}
	outSpec, err := optin.ParseOutputSpec(tbl.Properties()[optin.PropertyOutputSpec])
	if err != nil {
		return res, false, fmt.Errorf("plan %s: %w", name, err)
	}
	if outSpec >= 0 && tbl.Metadata().PartitionSpecByID(outSpec) == nil {
		return res, false, fmt.Errorf("plan %s: %w: %s=%d: the table has no such partition spec", name, optin.ErrBadProperty, optin.PropertyOutputSpec, outSpec)
	}
	into := optin.WrittenSpec(outSpec, tbl.Metadata().DefaultPartitionSpec())
	var cp compaction.Plan
	var grouped int // the plan's tasks, first in scanTasks
	var exchangeGroups []compaction.Group
	var sortOrderID *int
	var zOrderIDs []int
	var key binpack.SortKey
	var boundsFor []int // the columns whose bounds planning reads
	if strategy == optin.StrategySort || strategy == optin.StrategyZOrder {
		var kerr error
		if strategy == optin.StrategySort {
			var orderID int
			key, orderID, kerr = sortKey(tbl)
			sortOrderID = &orderID
			boundsFor = []int{key.FieldID}
		} else {
			cols := layout.ZOrderColumns
			if cols == nil {
				cols, kerr = optin.ZOrderColumns(tbl.Properties())
			}
			if kerr == nil {
				key, zOrderIDs, kerr = zOrderKey(tbl, cols)
			}
			boundsFor = zOrderIDs
			res.ZOrderColumns = cols
		}
		if kerr != nil {
			return res, false, fmt.Errorf("plan %s: %w", name, kerr)
		}
	}
	if err := p.checkPlanningMemory(ctx, tbl, snap, len(boundsFor)); err != nil {
		return res, false, fmt.Errorf("plan %s: %w", name, err)
	}
	idle, hotMinFiles, err := optin.HotPartitions(tbl.Properties())
	if err != nil {
		return res, false, fmt.Errorf("plan %s: %w", name, err)
	}
	minAge, err := optin.HotPartitionMinFileAge(tbl.Properties())
	if err != nil {
		return res, false, fmt.Errorf("plan %s: %w", name, err)
	}
	scanOpts := filescan.Options{Bounds: boundsFor}
	var writes map[string]time.Time
	if idle > 0 && minAge > 0 {
		// The young files of hot partitions are taken out before the
		// compaction plan (health.ScopeYoung), so the partitions' old files
		// are planned by the planner's own rules.
		if writes, err = health.RecentWrites(ctx, tbl, now, idle); err != nil {
			return res, false, fmt.Errorf("plan %s: %w", name, err)
		}
		scanOpts.AddedSince = now.Add(-minAge)
	}
	// Scan planning that keeps per file only what planning reads (package
	// filescan): a million files fit a 1 GB planner.
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return res, false, fmt.Errorf("plan %s: open table IO: %w", name, err)
	}
	scanTasks, err := filescan.Plan(ctx, tbl.Metadata(), snap, fsys, scanOpts)
	if err != nil {
		return res, false, fmt.Errorf("plan %s: plan files at snapshot %d: %w", name, pin.SnapshotID, err)
	}
	var young map[string]health.YoungFiles
	if !scanOpts.AddedSince.IsZero() {
		scanTasks, young = health.ScopeYoung(scanTasks, writes, now, idle, filescan.AddedSince)
	}
	if strategy == optin.StrategySort || strategy == optin.StrategyZOrder {
		if strategy == optin.StrategyZOrder && operator {
			key = deepestOverlap(tbl.Schema(), zOrderIDs, scanTasks, key)
		}
		onlyCandidates := strategy == optin.StrategyZOrder && !operator
		var sp binpack.SortedPlan
		if (strategy == optin.StrategySort || strategy == optin.StrategyZOrder && operator) && maxCommits == 0 {
			// A run too large for one rewriter is sorted in two stages
			// (package exchange), so it comes out disjoint too. Not in
			// batches: a batch commits on its own, an exchange's maps
			// and reduces only together. Not for the table's own z-order,
			// which rewrites only a run's candidates: its clustered
			// partitions would be rewritten whole for every new file.
			sp, err = binpack.PlanSortedExchanging(cfg, key, scanTasks, p.settings.MaxGroupBytes)
		} else {
			sp, err = binpack.PlanSorted(cfg, key, scanTasks, p.settings.MaxGroupBytes, onlyCandidates)
		}
		if err != nil {
			return res, false, fmt.Errorf("plan %s: %s compaction plan: %w", name, strategy, err)
		}
		grouped = binpack.Grouped(sp.Plan)
		cp, exchangeGroups = splitExchanges(sp)
		if res.OverlappingSortRuns = sp.Oversized; sp.Oversized > 0 {
			log.Warn("runs of overlapping files are larger than one rewriter's group: only their candidates are rewritten and they stay overlapping", "runs", sp.Oversized, "max_group_bytes", p.settings.MaxGroupBytes)
		}
	} else if cp, err = binpack.PlanInto(cfg, scanTasks, into, rules); err != nil {
		return res, false, fmt.Errorf("plan %s: compaction plan: %w", name, err)
	} else {
		grouped = binpack.Grouped(cp)
	}
	clear(scanTasks[grouped:])
	files := cp.TotalInputFiles
	hotGroups := len(cp.Groups) + len(exchangeGroups)
	youngFiles := 0
	for _, y := range young {
		youngFiles += y.Files
	}
	if idle > 0 && (hotGroups > 0 || youngFiles > 0) {
		if writes == nil {
			if writes, err = health.RecentWrites(ctx, tbl, now, idle); err != nil {
				return res, false, fmt.Errorf("plan %s: %w", name, err)
			}
		}
		namer := health.PartitionNamer(tbl.Metadata())
		cp.Groups, res.HotPartitions = health.ScopeHot(cp.Groups, writes, now, idle, hotMinFiles, namer)
		var hot []health.HotPartition
		exchangeGroups, hot = health.ScopeHot(exchangeGroups, writes, now, idle, hotMinFiles, namer)
		res.HotPartitions = health.NoteYoung(append(res.HotPartitions, hot...), young, writes, now, idle, minAge, namer)
		for _, h := range res.HotPartitions {
			log.Info("hot partition", "partition", h.Partition, "skipped", h.Skipped, "young_files", h.YoungFiles, "why", h.Why)
		}
	}
	if (strategy == optin.StrategySort || strategy == optin.StrategyZOrder) && !operator && layout.Strategy == "" {
		// A layout on trial (package layouttrial) rolls out no further
		// until its verdict: once it has reached the most-queried
		// partitions, only those are compacted (in it), so the verdict
		// compares partitions that are wholly in one layout or the other.
		trial, on, terr := layouttrial.Active(tbl)
		if terr != nil {
			return res, false, fmt.Errorf("plan %s: %w", name, terr)
		}
		if on {
			reached, err := health.Reached(ctx, tbl, trial.At)
			if err != nil {
				return res, false, fmt.Errorf("plan %s: %w", name, err)
			}
			if len(reached) > 0 {
				namer := health.PartitionNamer(tbl.Metadata())
				var held, heldX int
				cp.Groups, held = holdRollout(cp.Groups, reached, namer)
				exchangeGroups, heldX = holdRollout(exchangeGroups, reached, namer)
				res.TrialHeldGroups = held + heldX
				res.TrialHeld = fmt.Sprintf("the %s on %s is on trial since %s and has reached %d partitions: the others wait for its verdict", trial.Layout, strings.Join(trial.Columns, ", "), trial.At.UTC().Format(time.RFC3339), len(reached))
				log.Info("layout on trial: rollout held", "reached_partitions", len(reached), "held_groups", res.TrialHeldGroups)
				if len(cp.Groups) == 0 && len(exchangeGroups) == 0 {
					res.Outcome, res.Reason = OutcomeNothingToDo, res.TrialHeld
					return res, false, nil
				}
			}
		}
	}
	groups := SplitGroups(cp.Groups, p.settings.MaxGroupBytes)
	regular := len(groups)
	var exchanges []exchangePlan
	for _, xg := range exchangeGroups {
		x := exchangePlan{maps: SplitGroups([]compaction.Group{xg}, p.settings.MaxGroupBytes)}
		x.reduces = max(2, int((xg.TotalSizeBytes+p.settings.MaxGroupBytes-1)/p.settings.MaxGroupBytes))
		exchanges = append(exchanges, x)
		groups = append(groups, x.maps...)
	}
	var budget int64
	layoutJob := strategy == optin.StrategySort || strategy == optin.StrategyZOrder
	if layoutJob {
		if budget, err = optin.MaxBytesPerJob(tbl.Properties(), p.settings.MaxGroupBytes); err != nil {
			return res, false, fmt.Errorf("plan %s: %w", name, err)
		}
	}
	maxGroups := jobs.MaxGroups
	if decision.Bounded() {
		maxGroups = min(maxGroups, decision.MaxGroups)
	}
	if budget > 0 || p.settings.MaxJobFiles > 0 || len(groups) > maxGroups {
		var regularGroups []compaction.Group
		var paced bool
		regularGroups, exchanges, res.DeferredGroups, res.DeferredBytes, paced = p.withinBudget(ctx, log, name, tbl.Metadata(), groups[:regular], exchanges, budget, p.settings.MaxJobFiles, maxGroups, layoutJob)
		res.Continues = res.DeferredGroups > 0 && !paced
		groups, regular = regularGroups, len(regularGroups)
		for _, x := range exchanges {
			groups = append(groups, x.maps...)
		}
	}
	res.SkippedFiles = cp.SkippedFiles
	if len(groups) == 0 && youngFiles > 0 {
		res.Outcome = OutcomeNothingToDo
		res.Reason = fmt.Sprintf("every partition with files to compact is being written (hot, written within %s): their %d files added within the min file age of %s are left for the writers, and their older files are fewer than %d candidates or make no group worth rewriting", idle, youngFiles, minAge, hotMinFiles)
		log.Info("nothing to do: hot partitions' young files only", "hot_partitions", len(res.HotPartitions), "young_files", youngFiles)
		return res, false, nil
	}
	if len(groups) == 0 && hotGroups > 0 {
		res.Outcome = OutcomeNothingToDo
		res.Reason = fmt.Sprintf("every partition with files to compact is being written (hot, written within %s) and has fewer than %d candidate files: left until writes pause", idle, hotMinFiles)
		log.Info("nothing to do: hot partitions only", "hot_partitions", len(res.HotPartitions))
		return res, false, nil
	}
	if len(groups) == 0 {
		res.Outcome = OutcomeNothingToDo
		res.Reason = fmt.Sprintf("no file group worth rewriting (%d files, %d left alone)", files, cp.SkippedFiles)
		log.Info("nothing to do", "files", files)
		return res, false, nil
	}

	planObj := messages.Plan{Version: messages.FormatVersion, JobID: jobID, Table: name, Pin: pin}
	job := jobs.Job{
		ID: jobID, Table: name, Kind: jobs.KindCompaction, Trigger: trigger, Token: l.Token,
		MetadataLocation: pin.MetadataLocation, SnapshotID: pin.SnapshotID, SequenceNumber: pin.SequenceNumber,
		DeferredGroups: res.DeferredGroups, DeferredBytes: res.DeferredBytes, Continues: res.Continues,
	}
	if decision.Bounded() {
		job.Throttle = decision.Reason
	}
	jobGroups := make([]jobs.Group, 0, len(groups))
	outputSpec := func(specID int) int {
		if into == binpack.EachOwnSpec {
			return specID
		}
		return into
	}
	for i, g := range groups {
		pg := messages.PlanGroup{Index: i, SpecID: int(g.Tasks[0].File.SpecID()), Partition: PartitionString(g.Tasks[0]), InputBytes: g.TotalSizeBytes}
		if strings.HasSuffix(g.PartitionKey, ":*") {
			// binpack.PlanInto: files of an older spec, of any partition.
			pg.Partition = fmt.Sprintf("every partition of spec %d", pg.SpecID)
		}
		pg.OutputSpecID = outputSpec(pg.SpecID)
		for _, t := range g.Tasks {
			pg.InputPaths = append(pg.InputPaths, t.File.FilePath())
			pg.InputRows += t.File.Count()
		}
		sort.Strings(pg.InputPaths)
		planObj.Groups = append(planObj.Groups, pg)
		job.InputFiles += int64(len(g.Tasks))
		job.InputBytes += g.TotalSizeBytes
		job.InputRows += pg.InputRows
		jobGroups = append(jobGroups, jobs.Group{Index: i, InputFiles: int64(len(g.Tasks)), InputBytes: g.TotalSizeBytes})
	}
	// Each exchange's groups: its maps (planned above, after the regular
	// groups), then its reduces, which read no table file and whose tasks
	// the committer sends once the maps are done.
	mapAt, reduceAt := regular, len(groups)
	for id, x := range exchanges {
		ex := messages.Exchange{ID: id, SortOrderID: sortOrderID, ZOrderFieldIDs: zOrderIDs}
		if len(zOrderIDs) > 0 {
			ex.ZOrderLower, ex.ZOrderUpper = zOrderSpan(tbl.Schema(), zOrderIDs, x.maps)
		}
		for j := range x.maps {
			ex.Maps = append(ex.Maps, mapAt+j)
		}
		for j := range x.reduces {
			ex.Reduces = append(ex.Reduces, reduceAt+j)
		}
		for j := range x.maps {
			m := ex
			m.Role = messages.ExchangeMap
			planObj.Groups[mapAt+j].Exchange = &m
		}
		first := planObj.Groups[mapAt]
		for j := range x.reduces {
			r := ex
			r.Role, r.Range = messages.ExchangeReduce, j
			planObj.Groups = append(planObj.Groups, messages.PlanGroup{Index: reduceAt + j, SpecID: first.SpecID, Partition: first.Partition, OutputSpecID: first.OutputSpecID, Exchange: &r})
			jobGroups = append(jobGroups, jobs.Group{Index: reduceAt + j})
		}
		log.Info("a run too large for one rewriter is sorted in two stages", "exchange", id, "maps", len(x.maps), "reduces", x.reduces, "partition", first.Partition)
		mapAt += len(x.maps)
		reduceAt += x.reduces
	}
	job.TargetFileSize = cfg.TargetFileSizeBytes
	if maxCommits > 0 {
		// Partial progress: groups commit in batches of this many (jobs,
		// batches.go); one batch is one commit, as without it.
		if n := jobs.GroupsPerCommit(len(groups), maxCommits); n < len(groups) {
			job.BatchSize = n
		}
	}
	return p.startJob(ctx, log, res, tbl.Metadata(), planObj, job, jobGroups, groups, planStart, func(t *messages.Task, pg messages.PlanGroup) {
		t.TargetFileSize = cfg.TargetFileSizeBytes
		t.SortOrderID = sortOrderID
		t.ZOrderFieldIDs = zOrderIDs
		t.Exchange = pg.Exchange
	})
}

// throttle decides how hard a compaction of the table may press on its
// writers (package throttle), from its lease's failure record (the
// conflict aborts in a row) and its metadata (the writers' commits within
// throttle.Window, and those of them that removed files). An operator's cycle, which ignores backoffs, ignores
// the throttle too: its decision is recorded, and neither backs off nor
// bounds.
func (p *Planner) throttle(meta table.Metadata, l lease.Lease, now time.Time) throttle.Decision {
	conflicts := 0
	if l.Backoff.Class == lease.ClassConflict {
		conflicts = l.Backoff.Streak
	}
	w := health.WriterCommits(meta, now, throttle.Window)
	d := throttle.Decide(throttle.Signals{ConflictAborts: conflicts, WriterCommits: w.Commits, RemovingCommits: w.Removing, Concurrency: p.settings.RewriterConcurrency})
	if p.ignoreBackoff && (d.Bounded() || !d.Start) {
		d.Reason = "ignored by an operator's cycle: " + d.Reason
		d.Start, d.MaxGroups = true, 0
		d.Concurrency = max(p.settings.RewriterConcurrency, 1)
	}
	return d
}

// zOrderSpan is, per z-order column, the smallest lower bound and the
// largest upper bound of the groups' files, as the manifests hold them
// (nil for a column some file has no bound of).
func zOrderSpan(schema *iceberg.Schema, ids []int, groups []compaction.Group) (lower, upper [][]byte) {
	lower, upper = make([][]byte, len(ids)), make([][]byte, len(ids))
	for i, id := range ids {
		f, ok := schema.FindFieldByID(id)
		k := bounds.KindOf(f.Type)
		if !ok || k == 0 {
			continue
		}
		var lo, hi bounds.Value
		var loRaw, hiRaw []byte
		complete, first := true, true
		for _, g := range groups {
			for _, t := range g.Tasks {
				r, ok := bounds.Of(t.File, id, k, f.Type)
				if !ok {
					complete = false
					break
				}
				if first || bounds.Compare(k, r.Lo, lo) < 0 {
					lo, loRaw = r.Lo, t.File.LowerBoundValues()[id]
				}
				if first || bounds.Compare(k, r.Hi, hi) > 0 {
					hi, hiRaw = r.Hi, t.File.UpperBoundValues()[id]
				}
				first = false
			}
		}
		if complete && !first {
			lower[i], upper[i] = loRaw, hiRaw
		}
	}
	return lower, upper
}

// holdRollout keeps the groups of the partitions a layout on trial has
// reached (by name), and counts the others.
func holdRollout(groups []compaction.Group, reached map[string]time.Time, name func(iceberg.DataFile) string) ([]compaction.Group, int) {
	var kept []compaction.Group
	for _, g := range groups {
		if _, ok := reached[name(g.Tasks[0].File)]; ok {
			kept = append(kept, g)
		}
	}
	return kept, len(groups) - len(kept)
}

// withinBudget keeps, of a compaction's groups and exchanges, those that
// fit budget input bytes (a sort or z-order compaction's
// icekeeper.compaction.max-bytes-per-job; 0: any), maxFiles input files
// (ICEKEEPER_MAX_JOB_FILES, what one committer can commit; 0: any) and
// maxGroups groups (jobs.MaxGroups, or fewer when the throttle bounds the
// job), and at least one. With byHeat the most queried partitions' come first
// (signals.Heat of each group's partition; plan order among equals): a new
// layout rolls out a job at a time, hottest first. Otherwise plan order.
// It returns what it kept, how many groups (an exchange counts its maps)
// and bytes it left for later jobs, and whether the byte budget or a
// throttle's bound below jobs.MaxGroups bound (paced: the rest waits for
// later visits, not for the next job at once).
func (p *Planner) withinBudget(ctx context.Context, log *slog.Logger, table string, meta table.Metadata, groups []compaction.Group, exchanges []exchangePlan, budget, maxFiles int64, maxGroups int, byHeat bool) (kept []compaction.Group, keptX []exchangePlan, deferredGroups int, deferredBytes int64, paced bool) {
	type unit struct {
		group    *compaction.Group
		exchange *exchangePlan
		bytes    int64
		files    int64
		groups   int
		heat     float64
	}
	var units []unit
	var total, totalFiles int64
	totalGroups := 0
	for i := range groups {
		units = append(units, unit{group: &groups[i], bytes: groups[i].TotalSizeBytes, files: int64(len(groups[i].Tasks)), groups: 1})
		total += groups[i].TotalSizeBytes
		totalFiles += int64(len(groups[i].Tasks))
		totalGroups++
	}
	for i := range exchanges {
		// Its reduces are groups of the job too.
		u := unit{exchange: &exchanges[i], groups: len(exchanges[i].maps) + exchanges[i].reduces}
		for _, m := range exchanges[i].maps {
			u.bytes += m.TotalSizeBytes
			u.files += int64(len(m.Tasks))
		}
		units = append(units, u)
		total += u.bytes
		totalFiles += u.files
		totalGroups += u.groups
	}
	if maxGroups <= 0 {
		maxGroups = jobs.MaxGroups
	}
	over := func(bytes, files int64, groups int) bool {
		return budget > 0 && bytes > budget || maxFiles > 0 && files > maxFiles || groups > maxGroups
	}
	if !over(total, totalFiles, totalGroups) {
		return groups, exchanges, 0, 0, false
	}
	paced = budget > 0 && total > budget || maxGroups < jobs.MaxGroups && totalGroups > maxGroups
	if byHeat && p.heat != nil && budget > 0 {
		heat, err := p.heat.PartitionHeat(ctx, table)
		if err != nil {
			log.Warn("partition heat not read: the budget takes groups in plan order", "err", err.Error())
		}
		name := health.PartitionNamer(meta)
		for i := range units {
			first := units[i].group
			if first == nil {
				first = &units[i].exchange.maps[0]
			}
			units[i].heat = signals.Heat(heat, name(first.Tasks[0].File))
		}
		slices.SortStableFunc(units, func(a, b unit) int { return cmp.Compare(b.heat, a.heat) })
	}
	var used, usedFiles int64
	usedGroups := 0
	for _, u := range units {
		if usedFiles > 0 && over(used+u.bytes, usedFiles+u.files, usedGroups+u.groups) {
			deferredBytes += u.bytes
			if u.group != nil {
				deferredGroups++
			} else {
				deferredGroups += len(u.exchange.maps)
			}
			continue
		}
		used += u.bytes
		usedFiles += u.files
		usedGroups += u.groups
		if u.group != nil {
			kept = append(kept, *u.group)
		} else {
			keptX = append(keptX, *u.exchange)
		}
	}
	log.Info("compaction bounded: the rest is left for later jobs", "max_bytes_per_job", budget, "max_job_files", maxFiles, "max_groups", maxGroups, "kept_groups", usedGroups, "kept_bytes", used, "kept_files", usedFiles, "deferred_groups", deferredGroups, "deferred_bytes", deferredBytes, "paced", paced)
	return kept, keptX, deferredGroups, deferredBytes, paced
}

// exchangePlan is one two-stage sort: its map groups (chunks of the run's
// files, in key order) and its number of reduces (key ranges).
type exchangePlan struct {
	maps    []compaction.Group
	reduces int
}

// splitExchanges takes a sorted plan's exchange groups out of its groups.
func splitExchanges(sp binpack.SortedPlan) (compaction.Plan, []compaction.Group) {
	if len(sp.Exchanges) == 0 {
		return sp.Plan, nil
	}
	cp := sp.Plan
	var regular, exchanges []compaction.Group
	for i, g := range sp.Groups {
		if slices.Contains(sp.Exchanges, i) {
			exchanges = append(exchanges, g)
		} else {
			regular = append(regular, g)
		}
	}
	cp.Groups = regular
	return cp, exchanges
}

// deepestOverlap is the run key of an operator's z-order: the z column
// along which the files overlap the most (pruning.Overlap's depth over
// the table's files), so that a table already sorted on the first column
// (its files disjoint there, one file per run) is still z-ordered. Ties
// and files without bounds keep def.
func deepestOverlap(schema *iceberg.Schema, ids []int, tasks []table.FileScanTask, def binpack.SortKey) binpack.SortKey {
	best, bestDepth := def, 0
	for _, id := range ids {
		f, ok := schema.FindFieldByID(id)
		k := bounds.KindOf(f.Type)
		if !ok || k == 0 {
			continue
		}
		ranges := make([]bounds.Range, 0, len(tasks))
		for _, t := range tasks {
			if r, ok := bounds.Of(t.File, id, k, f.Type); ok {
				ranges = append(ranges, r)
			}
		}
		if depth, _ := pruning.Overlap(k, ranges); depth > bestDepth {
			best, bestDepth = binpack.SortKey{FieldID: id, Type: f.Type}, depth
		}
	}
	return best
}

// zOrderKey resolves a z-order's columns in tbl's current schema: their
// field ids, and the first column's key for grouping files into runs.
// Each must be a top-level column of a type zorder keys, and not the
// source of an identity partition field (one value per partition: it
// would only dilute the others' bits). Anything else is the owner's
// mistake (optin.ErrBadProperty).
func zOrderKey(tbl *table.Table, cols []string) (binpack.SortKey, []int, error) {
	var key binpack.SortKey
	var ids []int
	spec := tbl.Spec()
	for i, name := range cols {
		f, found := topLevelField(tbl.Schema(), func(c iceberg.NestedField) bool { return c.Name == name })
		if !found || bounds.KindOf(f.Type) == 0 {
			return key, nil, fmt.Errorf("%w: %s: %q is not a top-level column of a primitive type in the current schema", optin.ErrBadProperty, optin.PropertyZOrderColumns, name)
		}
		if _, decimal := f.Type.(iceberg.DecimalType); decimal {
			return key, nil, fmt.Errorf("%w: %s: %q is a decimal, which icekeeper cannot z-order yet", optin.ErrBadProperty, optin.PropertyZOrderColumns, name)
		}
		for _, pf := range spec.Fields() {
			if pf.SourceID() == f.ID && pf.Transform.Equals(iceberg.IdentityTransform{}) {
				return key, nil, fmt.Errorf("%w: %s: %q is the source of partition field %q, so it holds one value per partition: z-order the other columns", optin.ErrBadProperty, optin.PropertyZOrderColumns, name, pf.Name)
			}
		}
		if i == 0 {
			key = binpack.SortKey{FieldID: f.ID, Type: f.Type}
		}
		ids = append(ids, f.ID)
	}
	return key, ids, nil
}

// topLevelField is the first top-level column of schema that match
// accepts.
func topLevelField(schema *iceberg.Schema, match func(iceberg.NestedField) bool) (iceberg.NestedField, bool) {
	for _, c := range schema.Fields() {
		if match(c) {
			return c, true
		}
	}
	return iceberg.NestedField{}, false
}

// sortKey is what a sort compaction of tbl sorts by: its default sort
// order, grouped by the order's first column. A table without a sort
// order, or whose first sort column has no usable bounds, is refused
// (optin.ErrBadProperty: the owner asked for a sort the table cannot do).
func sortKey(tbl *table.Table) (binpack.SortKey, int, error) {
	order := tbl.SortOrder()
	if order.IsUnsorted() {
		return binpack.SortKey{}, 0, fmt.Errorf("%w: %s=%s: the table has no sort order; set one (Spark: ALTER TABLE ... WRITE ORDERED BY col) or use binpack", optin.ErrBadProperty, optin.PropertyCompactionStrategy, optin.StrategySort)
	}
	var key binpack.SortKey
	for i, sf := range order.Fields() {
		id := sf.SourceID()
		f, top := topLevelField(tbl.Schema(), func(c iceberg.NestedField) bool { return c.ID == id })
		if !top || bounds.KindOf(f.Type) == 0 {
			return key, 0, fmt.Errorf("%w: %s=%s: sort order %d sorts by field %d, which is not a top-level column of a primitive type in the current schema: icekeeper cannot sort by it", optin.ErrBadProperty, optin.PropertyCompactionStrategy, optin.StrategySort, order.OrderID(), id)
		}
		if i == 0 {
			key = binpack.SortKey{FieldID: id, Type: f.Type}
		}
	}
	return key, order.OrderID(), nil
}

func (p *Planner) taskBody(ctx context.Context, meta table.Metadata, pg messages.PlanGroup, job jobs.Job, g compaction.Group, decorate func(*messages.Task, messages.PlanGroup)) (string, error) {
	encoded, err := messages.EncodeScanTasks(meta, g.Tasks)
	if err != nil {
		return "", err
	}
	task := messages.NewGroupTask(job.ID, job.Table, job.Token, job.Pin(), pg)
	task.ScanTasks, task.InputFiles, task.InputBytes = encoded, len(g.Tasks), g.TotalSizeBytes
	if decorate != nil {
		decorate(&task, pg)
	}
	body, err := messages.Encode(task)
	if err != nil {
		return "", err
	}
	if len(body) <= p.settings.InlineTaskBytes {
		return string(body), nil
	}
	// Too large for one message: the scan tasks travel through S3.
	payload, err := messages.Encode(messages.ScanTaskList{Version: messages.FormatVersion, ScanTasks: encoded})
	if err != nil {
		return "", err
	}
	key, err := p.blobs.Put(ctx, fmt.Sprintf("jobs/%s/tasks/%05d.json", job.ID, pg.Index), payload)
	if err != nil {
		return "", err
	}
	task.ScanTasks, task.ScanTasksKey = nil, key
	body, err = messages.Encode(task)
	if err != nil {
		return "", err
	}
	return string(body), nil
}

// CompactionConfig derives iceberg-go's compaction planner settings from the
// table's properties, through the same thresholds the health report uses
// (package health), so that what health recommends is what the planner
// plans: write.target-file-size-bytes sets the target (unless override is
// positive), small files are below 75% of it, large ones above 180%. The
// rules are the bin-packing planner's beyond iceberg-go's
// (binpack.Rules: the file-count goal unless the owner set
// min-input-files).
func CompactionConfig(props map[string]string, override int64) (compaction.Config, binpack.Rules, error) {
	th, err := health.ThresholdsFor(props, override)
	if err != nil {
		return compaction.Config{}, binpack.Rules{}, err
	}
	cfg := th.CompactionConfig()
	if err := cfg.Validate(); err != nil {
		return cfg, binpack.Rules{}, fmt.Errorf("compaction config: %w", err)
	}
	return cfg, th.CompactionRules(), nil
}

// SplitGroups splits groups whose input exceeds maxBytes into consecutive
// chunks of at most maxBytes (a single file larger than maxBytes is a chunk
// of its own). Groups stay within one partition.
func SplitGroups(groups []compaction.Group, maxBytes int64) []compaction.Group {
	var out []compaction.Group
	for _, g := range groups {
		if g.TotalSizeBytes <= maxBytes {
			out = append(out, g)
			continue
		}
		// Chunks are sub-slices of the group's tasks: nothing is copied.
		start := 0
		cur := compaction.Group{PartitionKey: g.PartitionKey}
		for i, t := range g.Tasks {
			size := t.File.FileSizeBytes()
			if i > start && cur.TotalSizeBytes+size > maxBytes {
				cur.Tasks = g.Tasks[start:i:i]
				out = append(out, cur)
				start, cur = i, compaction.Group{PartitionKey: g.PartitionKey}
			}
			cur.TotalSizeBytes += size
			cur.DeleteFileCount += len(t.DeleteFiles) + len(t.EqualityDeleteFiles) + len(t.DeletionVectorFiles)
		}
		if start < len(g.Tasks) {
			cur.Tasks = g.Tasks[start:len(g.Tasks):len(g.Tasks)]
			out = append(out, cur)
		}
	}
	return out
}
