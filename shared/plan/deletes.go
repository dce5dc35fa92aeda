package plan

import (
	"context"
	"fmt"
	"log/slog"
	"sort"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/icekeeper/icekeeper/shared/filescan"
	"github.com/icekeeper/icekeeper/shared/health"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/optin"
)

// PlanDeleteRewrite plans one delete-file rewrite job for the named table:
// one group per partition whose position deletes are worth rewriting, each
// rewritten by a rewriter into one position delete file (v2) or one Puffin
// file of deletion vectors (v3), with the deletes that no longer apply to
// a live data file dropped (package rewrite, deletes.go). A partition is
// due when it has at least icekeeper.rewrite-deletes.min-input-files (5)
// position delete files; on a v3 table also when it has any position
// delete file at all (the v3 spec wants deletion vectors; such files are
// left from before an upgrade), or that many Puffin files of deletion
// vectors. A partition is due too when its equality deletes can be
// converted into position deletes or deletion vectors for less than
// rewriting the data files they apply to would cost (conversionPays); they
// join the group (see package rewrite, deletes.go, and docs/DESIGN.md,
// section 19).
//
// A group holds every position delete file and deletion vector of its
// partition at S, so that a data file's deletes are all carried over
// together: a new deletion vector supersedes every other delete of its
// data file.
func (p *Planner) PlanDeleteRewrite(ctx context.Context, name, trigger string) (Result, error) {
	return p.underLease(ctx, name, trigger, p.planDeleteRewriteLeased)
}

// partitionDeletes are one partition's deletes at S.
type partitionDeletes struct {
	key    string
	specID int
	// files are the group's input delete files: the position delete files
	// and deletion vectors, and the equality deletes when converted.
	files   []iceberg.DataFile
	pos     int // position delete files
	puffins map[string]struct{}
	// eqs are the equality deletes that may be converted, convert says
	// whether they are.
	eqs     []iceberg.DataFile
	convert bool
	// all are the partition's live data files, tasks those the group's
	// deletes apply to, rows their record count.
	all   []table.FileScanTask
	tasks []table.FileScanTask
	rows  int64
}

// conversionPays weighs converting the partition's equality deletes into
// position deletes or deletion vectors against applying them by rewriting
// the data files they apply to (compaction), and reports whether to
// convert.
//
// Rewriting pays off when the deletes remove a large share of the rows:
// converted, every later scan still reads the deleted rows. So when the
// equality delete rows (an upper bound on the rows they delete) reach
// deleteRatio of the rows of the data files they apply to (the ratio at
// which compaction rewrites a file, health.Thresholds.DeleteRatio), the
// partition is left to compaction. Otherwise the cost of the job itself
// decides, in bytes moved: converting reads each such data file's equality
// columns twice (their column sizes from the manifest, or the file's size
// shared evenly among its columns) and the delete files; rewriting reads
// the delete files and each data file whole, and writes it again. Amoro's
// minor optimizing makes the same trade.
func (pd *partitionDeletes) conversionPays(deleteRatio float64) bool {
	var convert, rewrite, eqRows, rows int64
	ids := map[int]bool{}
	for _, d := range pd.eqs {
		convert += d.FileSizeBytes()
		rewrite += d.FileSizeBytes()
		eqRows += d.Count()
		for _, id := range d.EqualityFieldIDs() {
			ids[id] = true
		}
	}
	for _, t := range pd.all {
		if !hasAny(t.EqualityDeleteFiles, pd.eqs) {
			continue
		}
		rows += t.File.Count()
		rewrite += 2 * t.File.FileSizeBytes()
		sizes := t.File.ColumnSizes()
		var cols int64
		for id := range ids {
			n, ok := sizes[id]
			if !ok {
				n = t.File.FileSizeBytes() / int64(max(len(sizes), 1))
			}
			cols += n
		}
		convert += 2 * cols
	}
	if rows > 0 && float64(eqRows) >= deleteRatio*float64(rows) {
		return false
	}
	return convert <= rewrite
}

// hasAny reports whether attached holds one of files.
func hasAny(attached, files []iceberg.DataFile) bool {
	for _, a := range attached {
		for _, f := range files {
			if messages.DeleteFileKey(a) == messages.DeleteFileKey(f) {
				return true
			}
		}
	}
	return false
}

func (p *Planner) planDeleteRewriteLeased(ctx context.Context, log *slog.Logger, ident table.Identifier, name, jobID, trigger string, l lease.Lease) (res Result, started bool, err error) {
	res = Result{Table: name}
	planStart := p.now()
	fail := func(err error) (Result, bool, error) {
		return res, false, fmt.Errorf("plan delete-file rewrite of %s: %w", name, err)
	}
	tbl, err := p.loadLeased(ctx, log, ident, name, l, &res)
	if err != nil {
		return fail(err)
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		res.Outcome, res.Reason = OutcomeNothingToDo, "table has no snapshot"
		return res, false, nil
	}
	meta := tbl.Metadata()
	if meta.Version() < 2 {
		res.Outcome, res.Reason = OutcomeNothingToDo, "a v1 table has no delete files"
		return res, false, nil
	}
	minFiles, err := optin.RewriteDeletesMinInputFiles(tbl.Properties())
	if err != nil {
		return fail(err)
	}
	th, err := health.ThresholdsFor(tbl.Properties(), p.settings.TargetFileSize)
	if err != nil {
		return fail(err)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return fail(fmt.Errorf("open table IO: %w", err))
	}
	manifests, err := snap.Manifests(fsys)
	if err != nil {
		return fail(fmt.Errorf("read manifest list: %w", err))
	}
	pin := messages.Pin{MetadataLocation: tbl.MetadataLocation(), SnapshotID: snap.SnapshotID, SequenceNumber: snap.SequenceNumber}
	// The data files the deletes apply to, one whole-file task each, with
	// the position deletes and deletion vectors a scan at S attaches, and
	// the equality deletes by the spec's rule (package filescan: a superset
	// of what a scan's statistics pruning attaches, so a conversion may
	// read a data file it finds no row to delete in), with the sizes of
	// their columns for conversionPays. As light as the compaction's
	// planning, and refused loud when even that does not fit.
	if err := p.checkPlanningMemory(ctx, tbl, snap, 0); err != nil {
		return fail(err)
	}
	scanTasks, err := filescan.Plan(ctx, meta, snap, fsys, filescan.Options{EqualityColumnSizes: true})
	if err != nil {
		return fail(fmt.Errorf("plan files at snapshot %d: %w", pin.SnapshotID, err))
	}
	specsInUse := map[int]bool{}
	for _, t := range scanTasks {
		specsInUse[int(t.File.SpecID())] = true
	}
	parts := map[string]*partitionDeletes{}
	partOf := func(df iceberg.DataFile) *partitionDeletes {
		k := messages.PartitionKey(df)
		pd := parts[k]
		if pd == nil {
			pd = &partitionDeletes{key: k, specID: int(df.SpecID()), puffins: map[string]struct{}{}}
			parts[k] = pd
		}
		return pd
	}
	for _, m := range manifests {
		if m.ManifestContent() != iceberg.ManifestContentDeletes {
			continue
		}
		for e, err := range m.Entries(fsys, true) {
			if err != nil {
				return fail(fmt.Errorf("read manifest %s: %w", m.FilePath(), err))
			}
			df := e.DataFile()
			switch {
			case df.ContentType() == iceberg.EntryContentEqDeletes:
				// Only an equality delete whose every data file is in its
				// group can go: one scoped to a partition (it applies to
				// that spec and partition only), or one of an
				// unpartitioned table with a single spec in use.
				if len(df.Partition()) > 0 || len(specsInUse) == 1 && specsInUse[int(df.SpecID())] {
					pd := partOf(df)
					pd.eqs = append(pd.eqs, df)
				}
			case df.ContentType() != iceberg.EntryContentPosDeletes:
			case table.IsDeletionVector(df):
				pd := partOf(df)
				pd.files = append(pd.files, df)
				pd.puffins[df.FilePath()] = struct{}{}
			default:
				pd := partOf(df)
				pd.files = append(pd.files, df)
				pd.pos++
			}
		}
	}
	for _, t := range scanTasks {
		if pd := parts[messages.PartitionKey(t.File)]; pd != nil {
			pd.all = append(pd.all, t)
		}
	}
	v3 := meta.Version() >= 3
	var due []*partitionDeletes
	converting := 0
	for _, pd := range parts {
		pd.convert = len(pd.eqs) > 0 && pd.conversionPays(th.DeleteRatio)
		if pd.convert {
			converting++
		}
		if pd.convert || pd.pos >= minFiles || v3 && (pd.pos > 0 || len(pd.puffins) >= minFiles) {
			due = append(due, pd)
		}
	}
	if len(due) == 0 {
		res.Outcome = OutcomeNothingToDo
		res.Reason = fmt.Sprintf("no partition has %d or more position delete files (%s)", minFiles, optin.PropertyRewriteDeletesMinInputFiles)
		if v3 {
			res.Reason = fmt.Sprintf("no partition has position delete files to turn into deletion vectors, or %d or more Puffin files (%s)", minFiles, optin.PropertyRewriteDeletesMinInputFiles)
		}
		res.Reason += ", and no equality delete is better converted than applied by compaction"
		return res, false, nil
	}
	sort.Slice(due, func(i, j int) bool { return due[i].key < due[j].key })
	if len(due) > jobs.MaxGroups {
		// One group per partition: the rest is left for the next job.
		res.DeferredGroups = len(due) - jobs.MaxGroups
		due = due[:jobs.MaxGroups]
		log.Info("delete-file rewrite bounded: the rest is left for later jobs", "max_groups", jobs.MaxGroups, "deferred_groups", res.DeferredGroups)
	}
	res.SnapshotID = pin.SnapshotID
	log = log.With("snapshot_id", pin.SnapshotID, "partitions_converting_equality_deletes", converting)
	for _, pd := range due {
		if pd.convert {
			pd.files = append(pd.files, pd.eqs...)
		}
		for _, t := range pd.all {
			if len(t.DeleteFiles)+len(t.DeletionVectorFiles) > 0 || pd.convert && hasAny(t.EqualityDeleteFiles, pd.eqs) {
				pd.tasks = append(pd.tasks, t)
				pd.rows += t.File.Count()
			}
		}
	}

	planObj := messages.Plan{Version: messages.FormatVersion, JobID: jobID, Table: name, Pin: pin}
	job := jobs.Job{
		ID: jobID, Table: name, Kind: jobs.KindRewriteDeletes, Trigger: trigger, Token: l.Token,
		MetadataLocation: pin.MetadataLocation, SnapshotID: pin.SnapshotID, SequenceNumber: pin.SequenceNumber,
	}
	var jobGroups []jobs.Group
	var groups []compaction.Group
	for i, pd := range due {
		pg := messages.PlanGroup{Index: i, SpecID: pd.specID, OutputSpecID: pd.specID, Partition: PartitionString(table.FileScanTask{File: pd.files[0]}), InputRows: pd.rows}
		for _, d := range pd.files {
			pg.InputDeletes = append(pg.InputDeletes, messages.DeleteFileKey(d))
			pg.InputBytes += deleteBytes(d)
		}
		sort.Strings(pg.InputDeletes)
		for _, t := range pd.tasks {
			pg.InputPaths = append(pg.InputPaths, t.File.FilePath())
		}
		sort.Strings(pg.InputPaths)
		planObj.Groups = append(planObj.Groups, pg)
		job.InputFiles += int64(len(pd.files))
		job.InputBytes += pg.InputBytes
		job.InputRows += pd.rows
		jobGroups = append(jobGroups, jobs.Group{Index: i, InputFiles: int64(len(pd.files)), InputBytes: pg.InputBytes})
		groups = append(groups, compaction.Group{Tasks: pd.tasks, TotalSizeBytes: pg.InputBytes})
	}
	return p.startJob(ctx, log, res, meta, planObj, job, jobGroups, groups, planStart, func(t *messages.Task, pg messages.PlanGroup) {
		t.Deletes = &messages.DeleteRewrite{InputDeletes: pg.InputDeletes}
	})
}

// deleteBytes is what a delete file costs to read: a deletion vector's
// blob, else the whole file.
func deleteBytes(d iceberg.DataFile) int64 {
	if n := d.ContentSizeInBytes(); n != nil {
		return *n
	}
	return d.FileSizeBytes()
}
