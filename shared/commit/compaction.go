package commit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/outputs"
)

// commit runs steps 2 to 5 for a job in the committing state; tookOver
// says this committer took the job over from one that went silent.
func (c *Committer) commit(ctx context.Context, log *slog.Logger, job jobs.Job, ident table.Identifier, term lease.Lease, me string, tookOver bool) (Result, error) {
	batch := job.CommittingBatch
	res := Result{JobID: job.ID, Table: job.Table, Batch: batch}
	cur, err := c.catalog.LoadTable(ctx, ident)
	if err != nil {
		return res, fmt.Errorf("load table %s: %w", job.Table, classify(err))
	}
	if snap := FindBatchSnapshot(cur, job.ID, batch); snap != nil {
		return c.finishAny(ctx, log, job, term, me, snap.SnapshotID, "found the job's snapshot in the table")
	}
	if _, err := c.leases.Renew(ctx, term, c.settings.LeaseTTL); err != nil {
		if errors.Is(err, lease.ErrLost) {
			return res, fmt.Errorf("%w before commit", errLeaseLost)
		}
		return res, err
	}

	pin := job.Pin()
	pinned, err := c.tables.Open(ctx, ident, pin)
	if err != nil {
		return res, fmt.Errorf("open pinned table: %w", err)
	}
	if tookOver && job.Kind == jobs.KindCompaction {
		// The silent committer may have written a rebase round's delete
		// files: the job's snapshot is not in the table and its catalog
		// call can no longer land (CommitDeadline), so nothing references
		// them.
		if n, err := outputs.RemoveAttempts(ctx, pinned, []string{jobs.RebaseAttempt(job.ID, batch)}); err != nil {
			log.Warn("remove the previous committer's rebased deletes", "err", err.Error())
		} else if n > 0 {
			log.Info("removed the previous committer's rebased deletes", "files", n)
		}
	}
	gather := c.gather
	if job.Kind == jobs.KindRewriteDeletes {
		gather = c.gatherDeletes
	}
	staged, err := gather(ctx, job, pinned)
	if err != nil {
		return res, err
	}
	if batch > 0 {
		if staged, err = withoutEarlierBatchRemovals(ctx, cur, job, staged); err != nil {
			return res, err
		}
	}
	res.FilesRemoved, res.FilesAdded, res.DeletesRemoved, res.RowsWritten = len(staged.oldFiles), len(staged.newFiles), len(staged.deadDeletes), staged.rowsWritten
	if job.Kind == jobs.KindRewriteDeletes {
		// Its new files are delete files (DataFilesAdded counts data files).
		res.FilesAdded, res.RowsWritten = 0, 0
	}

	cache, validated := newRebaseCache(), map[int64]Concurrent{}
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			cur, err = c.catalog.LoadTable(ctx, ident)
			if err != nil {
				return res, fmt.Errorf("reload table %s: %w", job.Table, classify(err))
			}
			if snap := FindBatchSnapshot(cur, job.ID, batch); snap != nil {
				res2, err := c.finishAny(ctx, log, job, term, me, snap.SnapshotID, "found the job's snapshot after a conflict")
				res2.Retries = attempt
				return res2, err
			}
		}
		var conc Concurrent
		if err := validateSince(ctx, cur, pin, staged.scope, &conc, validated); err != nil {
			return res, err
		}
		if err := CheckStillValid(cur, pinned, staged.newFiles); err != nil {
			return res, err
		}
		round := staged
		if !conc.Empty() {
			if round, err = c.rebase(ctx, log, cur, pinned, job, pin, staged, conc, cache); err != nil {
				return res, err
			}
			res.DeletesRebased = len(round.rebaseRemoves)
		}
		committed, err := c.commitOnce(ctx, cur, job, me, pin, round)
		if err != nil && IsConflict(err) {
			// Not committed: this round's rebased deletes are unused.
			c.removeRebased(ctx, log, cur, round)
		}
		if err == nil {
			if c.afterCatalogCommit != nil {
				if herr := c.afterCatalogCommit(job.ID); herr != nil {
					return res, herr
				}
			}
			snap := FindBatchSnapshot(committed, job.ID, batch)
			if snap == nil {
				return res, fmt.Errorf("%w: committed table has no snapshot stamped %s", ErrInvariant, job.ID)
			}
			out, ferr := c.finishAny(ctx, log, job, term, me, snap.SnapshotID, "committed")
			out.Retries, out.Conflicts = attempt, res.Conflicts
			out.FilesRemoved, out.FilesAdded, out.DeletesRemoved, out.RowsWritten = res.FilesRemoved, res.FilesAdded, res.DeletesRemoved, res.RowsWritten
			out.DeletesRebased = res.DeletesRebased
			return out, ferr
		}
		if errors.Is(err, ErrBusy) {
			return res, err
		}
		if !IsConflict(err) {
			// The outcome may be unknown (the catalog may have accepted it):
			// look before deciding anything.
			if again, lerr := c.catalog.LoadTable(ctx, ident); lerr == nil {
				if snap := FindBatchSnapshot(again, job.ID, batch); snap != nil {
					return c.finishAny(ctx, log, job, term, me, snap.SnapshotID, "found the job's snapshot after an error")
				}
			}
			return res, fmt.Errorf("commit: %w", classify(err))
		}
		res.Conflicts++
		if attempt >= c.settings.MaxRetries {
			return res, fmt.Errorf("%w: %w: %d commit conflicts, retries exhausted: %w", ErrAborted, ErrConcurrent, attempt+1, err)
		}
		log.Warn("commit conflict; reloading", "attempt", attempt+1, "err", err.Error())
		res.Retries = attempt + 1
		if err := sleep(ctx, backoff(c.settings.Backoff, attempt)); err != nil {
			return res, err
		}
	}
}

type stagedRewrite struct {
	oldFiles    []iceberg.DataFile
	newFiles    []iceberg.DataFile
	deadDeletes []iceberg.DataFile
	scope       Scope
	rowsWritten int64
	// addFirst: the new files are delete files that replace equality
	// deletes (a delete-file rewrite that converts them). iceberg-go's
	// RewriteFiles cannot swap the two kinds in one snapshot, so one
	// transaction stages two: a row delta that adds the new deletes (and
	// removes the deletion vectors they supersede), then a rewrite that
	// removes the rest of the inputs (see commitOnce).
	addFirst bool
	// groups are the descriptors' row maps and new files, and groupOf the
	// group of each input file (a compaction's; see rebase.go).
	groups  []groupOutput
	groupOf map[string]int
	// rebaseRemoves are the concurrent delete files a rebase replaces
	// (removed explicitly), rebaseAdds what replaces them, each with the
	// data sequence number it keeps.
	rebaseRemoves []iceberg.DataFile
	rebaseAdds    []rebasedDelete
	// batch is the batch of a batched job being committed (0: the job).
	batch int
}

// gather reads the plan and the winning descriptors, checks the job's
// invariants and collects the files to swap.
func (c *Committer) gather(ctx context.Context, job jobs.Job, pinned *table.Table) (stagedRewrite, error) {
	var st stagedRewrite
	plan, groups, err := c.readPlan(ctx, job)
	if err != nil {
		return st, err
	}
	st.batch = job.CommittingBatch
	planned := job.InputFiles
	if st.batch > 0 {
		groups, planned = batchGroups(job, groups, plan)
	}
	st.scope = Scope{Rewritten: map[string]struct{}{}, MovedPartitions: map[string]struct{}{}, Removing: map[string]struct{}{}, Rebase: !c.settings.NoRebase}
	st.groupOf = map[string]int{}
	movedInputs := map[string]struct{}{}
	newPaths := map[string]struct{}{}
	schemaID := pinned.Schema().ID
	// A descriptor may only name files its attempt wrote under the table's
	// data location: a descriptor that names anything else (another table's
	// file, a path outside the location) is refused, whatever wrote it.
	dataRoots := outputs.DataRoots(pinned)
	var totalScanned int64
	exchanged := exchangeCounts{}
	for _, g := range groups {
		pg := plan.Groups[g.Index]
		d, err := c.readDescriptor(ctx, job, g, pg)
		if err != nil {
			return st, err
		}
		// A two-stage sort's map writes pages, not files; its reduce
		// reads pages, not table files (package exchange).
		isMap := pg.Exchange != nil && pg.Exchange.Role == messages.ExchangeMap
		isReduce := pg.Exchange != nil && pg.Exchange.Role == messages.ExchangeReduce
		switch {
		case isMap && (d.Exchange == nil || d.Exchange.ID != pg.Exchange.ID || len(d.NewFiles) > 0 || d.Exchange.Index.Rows != d.Counters.RowsWritten):
			return st, fmt.Errorf("%w: group %d is a map of exchange %d, its descriptor is not", ErrInvariant, g.Index, pg.Exchange.ID)
		case isMap:
			exchanged.add(pg.Exchange.ID, d.Exchange.Index.Rows, 0)
		case isReduce:
			exchanged.add(pg.Exchange.ID, 0, d.Counters.RowsWritten)
		case d.Exchange != nil:
			return st, fmt.Errorf("%w: group %d wrote exchange pages, the plan has no exchange for it", ErrInvariant, g.Index)
		}
		if d.SchemaID != schemaID {
			return st, fmt.Errorf("%w: group %d was written with schema %d, the pinned metadata's current schema is %d", ErrInvariant, g.Index, d.SchemaID, schemaID)
		}
		if len(d.NewFiles) > 0 && d.SpecID != pg.OutputSpecID {
			return st, fmt.Errorf("%w: group %d wrote spec %d, the plan asked for spec %d", ErrInvariant, g.Index, d.SpecID, pg.OutputSpecID)
		}
		moved := d.SpecID != pg.SpecID
		for _, p := range d.InputPaths {
			if _, dup := st.scope.Rewritten[p]; dup {
				return st, fmt.Errorf("%w: input %s is in more than one group", ErrInvariant, p)
			}
			st.scope.Rewritten[p] = struct{}{}
			if moved {
				movedInputs[p] = struct{}{}
			}
		}
		cnt := d.Counters
		if cnt.RowsBeforeDeletes != pg.InputRows {
			return st, fmt.Errorf("%w: group %d read %d rows before deletes, the plan has %d", ErrInvariant, g.Index, cnt.RowsBeforeDeletes, pg.InputRows)
		}
		if cnt.RowsWritten != cnt.RowsScanned || (cnt.RowsScanned > cnt.RowsBeforeDeletes && !isReduce) {
			return st, fmt.Errorf("%w: group %d wrote %d rows, scanned %d, of %d before deletes", ErrInvariant, g.Index, cnt.RowsWritten, cnt.RowsScanned, cnt.RowsBeforeDeletes)
		}
		files, err := messages.DecodeDataFiles(pinned.Metadata(), d.SpecID, d.NewFiles)
		if err != nil {
			return st, fmt.Errorf("%w: group %d: %w", ErrInvariant, g.Index, err)
		}
		var rows int64
		for _, f := range files {
			if _, dup := newPaths[f.FilePath()]; dup {
				return st, fmt.Errorf("%w: new file %s written twice", ErrInvariant, f.FilePath())
			}
			if !outputs.OfAttempt(f.FilePath(), d.Attempt) {
				return st, fmt.Errorf("%w: new file %s is not named for attempt %s", ErrInvariant, f.FilePath(), d.Attempt)
			}
			if !underAny(f.FilePath(), dataRoots) {
				return st, fmt.Errorf("%w: new file %s is outside the table's data location (%s)", ErrInvariant, f.FilePath(), strings.Join(dataRoots, ", "))
			}
			newPaths[f.FilePath()] = struct{}{}
			rows += f.Count()
			if moved {
				st.scope.MovedPartitions[partitionKey(f)] = struct{}{}
			}
		}
		if tableRows := cnt.RowsWritten; rows != tableRows && !(isMap && rows == 0) {
			return st, fmt.Errorf("%w: group %d: new files hold %d rows, descriptor says %d", ErrInvariant, g.Index, rows, tableRows)
		}
		st.newFiles = append(st.newFiles, files...)
		st.rowsWritten += rows
		st.groups = append(st.groups, groupOutput{desc: d, files: files})
		for _, p := range d.InputPaths {
			st.groupOf[p] = len(st.groups) - 1
		}
		if !isReduce {
			// Rows read from the table (a reduce's came from the maps).
			totalScanned += cnt.RowsScanned
		}
	}
	if err := exchanged.check(); err != nil {
		return st, err
	}
	if int64(len(st.scope.Rewritten)) != planned {
		return st, fmt.Errorf("%w: %d input files accounted for, the job planned %d", ErrInvariant, len(st.scope.Rewritten), planned)
	}
	if st.rowsWritten != totalScanned {
		return st, fmt.Errorf("%w: wrote %d rows in total, scanned %d", ErrInvariant, st.rowsWritten, totalScanned)
	}

	fs, err := pinned.FS(ctx)
	if err != nil {
		return st, fmt.Errorf("open table IO: %w", err)
	}
	snapS := pinned.CurrentSnapshot()
	var inputSeqs map[string]int64
	st.oldFiles, st.scope.RewrittenPartitions, inputSeqs, err = liveFiles(ctx, fs, pinned, snapS, st.scope.Rewritten)
	if err != nil {
		return st, err
	}
	if len(st.oldFiles) != len(st.scope.Rewritten) {
		return st, fmt.Errorf("%w: %d of %d input files are live at the pinned snapshot", ErrInvariant, len(st.oldFiles), len(st.scope.Rewritten))
	}
	for _, f := range st.oldFiles {
		if _, ok := movedInputs[f.FilePath()]; ok {
			st.scope.MovedPartitions[partitionKey(f)] = struct{}{}
		}
	}
	gone := replacedByNow(job, plan, st.scope.Rewritten)
	deadPos, err := compaction.CollectDeadPositionDeletes(ctx, fs, snapS, gone)
	if err != nil {
		return st, fmt.Errorf("collect dead position deletes: %w", err)
	}
	deadEq, err := compaction.CollectDeadEqualityDeletesWithSpecs(ctx, fs, pinned.Metadata(), snapS, gone)
	if err != nil {
		return st, fmt.Errorf("collect dead equality deletes: %w", err)
	}
	// Every delete file the rewriters applied, dead or not: a concurrent
	// removal of any of them aborts (or, a position delete or DV, goes to
	// the rebase's check; see ValidateSince).
	var dvs []iceberg.DataFile
	if st.scope.Applied, dvs, err = appliedDeletes(ctx, fs, pinned.Metadata(), snapS, st.oldFiles, inputSeqs); err != nil {
		return st, err
	}
	for _, d := range append(append(deadPos, deadEq...), dvs...) {
		if _, ok := st.scope.Removing[fileKey(d)]; ok {
			continue
		}
		st.scope.Removing[fileKey(d)] = struct{}{}
		st.deadDeletes = append(st.deadDeletes, d)
	}
	return st, nil
}

// replacedByNow is what of the pinned snapshot's data files the job has
// replaced once this commit lands: the committing inputs and, for a batch,
// the inputs of the job's batches already committed. A delete file that
// applies only to those is dead, including one that spans batches, which
// no single batch's inputs cover (section 22.3 of DESIGN.md).
func replacedByNow(job jobs.Job, plan messages.Plan, committing map[string]struct{}) map[string]struct{} {
	if job.CommittingBatch == 0 || len(job.CommittedBatches) == 0 {
		return committing
	}
	out := maps.Clone(committing)
	for b := range job.CommittedBatches {
		if b == job.CommittingBatch {
			continue
		}
		for _, g := range job.BatchGroups(b) {
			for _, p := range plan.Groups[g].InputPaths {
				out[p] = struct{}{}
			}
		}
	}
	return out
}

// readPlan reads the job's plan and group records and checks that they
// agree with the job on the number of groups.
func (c *Committer) readPlan(ctx context.Context, job jobs.Job) (messages.Plan, []jobs.Group, error) {
	var plan messages.Plan
	planBytes, err := c.blobs.Get(ctx, job.PlanKey)
	if err != nil {
		return plan, nil, fmt.Errorf("read plan: %w", err)
	}
	if err := messages.Decode(planBytes, &plan); err != nil {
		return plan, nil, fmt.Errorf("%w: %w", ErrInvariant, err)
	}
	groups, err := c.jobs.Groups(ctx, job.ID)
	if err != nil {
		return plan, nil, err
	}
	if len(plan.Groups) != job.Groups || len(groups) != job.Groups {
		return plan, nil, fmt.Errorf("%w: plan has %d groups, job %d, records %d", ErrInvariant, len(plan.Groups), job.Groups, len(groups))
	}
	return plan, groups, nil
}

// readDescriptor reads a done group's winning descriptor and checks that it
// is the winner's, for this job and group, and that it read exactly the
// plan group's data files.
func (c *Committer) readDescriptor(ctx context.Context, job jobs.Job, g jobs.Group, pg messages.PlanGroup) (messages.Descriptor, error) {
	var d messages.Descriptor
	if g.Index != pg.Index || g.State != jobs.GroupDone || g.DescriptorKey == "" {
		return d, fmt.Errorf("%w: group %d is %s", ErrInvariant, g.Index, g.State)
	}
	data, err := c.blobs.Get(ctx, g.DescriptorKey)
	if err != nil {
		return d, fmt.Errorf("read descriptor of group %d: %w", g.Index, err)
	}
	if err := messages.Decode(data, &d); err != nil {
		return d, fmt.Errorf("%w: group %d: %w", ErrInvariant, g.Index, err)
	}
	if d.JobID != job.ID || d.Group != g.Index || d.Attempt != g.Winner {
		return d, fmt.Errorf("%w: group %d: descriptor is for job %s group %d attempt %s, winner is %s", ErrInvariant, g.Index, d.JobID, d.Group, d.Attempt, g.Winner)
	}
	if !equalStrings(messages.SortedCopy(d.InputPaths), pg.InputPaths) {
		return d, fmt.Errorf("%w: group %d read %d files, the plan has %d (or different ones)", ErrInvariant, g.Index, len(d.InputPaths), len(pg.InputPaths))
	}
	return d, nil
}

// commitOnce stages the rewrite on top of cur, fences it, and commits it.
//
// The fence: right before the catalog call the committer refreshes its
// ownership of the committing job (a heartbeat conditional on the job being
// committing under its id); losing it is ErrBusy, and nothing is sent. The
// call then gets at most CommitDeadline, shorter than the takeover window
// that the heartbeat restarted, so no other committer can take the job over
// (and abort it, deleting its files) while this call may still land.
func (c *Committer) commitOnce(ctx context.Context, cur *table.Table, job jobs.Job, me string, pin messages.Pin, st stagedRewrite) (*table.Table, error) {
	txn := cur.NewTransaction()
	props := iceberg.Properties{
		SummaryJobID:                job.ID,
		"icekeeper.pinned-snapshot": fmt.Sprint(pin.SnapshotID),
	}
	if st.batch > 0 {
		props[messages.SummaryBatch] = strconv.Itoa(st.batch)
	}
	if st.addFirst && len(st.newFiles) > 0 {
		var err error
		if st, err = stageAddedDeletes(ctx, txn, props, st); err != nil {
			return nil, err
		}
	}
	rw := txn.NewRewrite(props)
	rw.DataSequenceNumber(pin.SequenceNumber)
	for _, f := range st.oldFiles {
		rw.DeleteFile(f)
	}
	for _, f := range st.newFiles {
		rw.AddFile(f) // data files, or a delete rewrite's delete files
	}
	if len(st.rebaseRemoves) == 0 {
		for _, d := range st.deadDeletes {
			rw.DeleteFile(d)
		}
	} else {
		// iceberg-go gives an added delete file one of the data sequence
		// numbers of the delete files removed explicitly, all of one
		// content: those are the concurrent deletes the rebase replaces.
		// The dead deletes (equality ones among them) go as automatic
		// removals, which ApplyResult routes by content.
		var dead table.CompactionGroupResult
		for _, d := range st.deadDeletes {
			if table.IsDeletionVector(d) {
				dead.SafeDeletionVectors = append(dead.SafeDeletionVectors, d)
			} else {
				dead.SafePosDeletes = append(dead.SafePosDeletes, d)
			}
		}
		rw.ApplyResult(dead)
		for _, d := range st.rebaseRemoves {
			rw.DeleteFile(d)
		}
		for _, a := range st.rebaseAdds {
			rw.AddDeleteFileWithDataSequenceNumber(a.file, a.seq)
		}
	}
	if err := rw.Commit(ctx); err != nil {
		return nil, fmt.Errorf("stage rewrite: %w", err)
	}
	if err := keepNameMapping(txn, cur); err != nil {
		return nil, err
	}
	if err := c.jobs.Heartbeat(ctx, job.ID, me); err != nil {
		if errors.Is(err, jobs.ErrStateConflict) {
			return nil, fmt.Errorf("%w: lost the committing job before the catalog commit: %v", ErrBusy, err)
		}
		return nil, fmt.Errorf("fence before the catalog commit: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, c.settings.CommitDeadline)
	defer cancel()
	return txn.Commit(cctx)
}

// keepNameMapping undoes what iceberg-go's rewrite adds to the owner's
// properties: it sets schema.name-mapping.default, from the current
// schema, on a table that has none (Transaction.ensureNameMapping).
// Iceberg Java's RewriteFiles leaves the table's properties as they are,
// and a mapping nobody asked for would be used by every reader for files
// without field ids, and kept stale by schema changes of engines that do
// not update it. A table that has a mapping keeps it untouched.
func keepNameMapping(txn *table.Transaction, base *table.Table) error {
	if _, had := base.Properties()[table.DefaultNameMappingKey]; had {
		return nil
	}
	if err := txn.RemoveProperties([]string{table.DefaultNameMappingKey}); err != nil {
		return fmt.Errorf("stage rewrite: keep the table without a name mapping: %w", err)
	}
	return nil
}
