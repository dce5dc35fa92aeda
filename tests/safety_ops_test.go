package tests

// The other tools of the safety harness (see safety_test.go): everything
// that shares the tables' storage with icekeeper. Writers append, delete
// (position deletes or deletion vectors, equality deletes) and overwrite,
// on main or on a branch; ref management creates, moves and drops tags and
// branches (catalog commits of SetSnapshotRef and RemoveSnapshotRef, as
// iceberg-go v0.7.0 has no ManageSnapshots API), rolls main back to an
// ancestor (Transaction.RollbackToSnapshot) and points main at a branch's
// head (the nearest to a cherry-pick or fast-forward: iceberg-go has no
// cherry-pick); another tool expires snapshots with iceberg-go's own
// Transaction.ExpireSnapshots, deleting what that frees; table owners
// change the metadata's compression, its retention of old metadata files
// (write.metadata.delete-after-commit.enabled, previous-versions-max), the
// object-storage layout and write.data.path; stray files are planted; and
// time passes (every file on storage ages by four days, which is how the
// harness makes files older than the orphan safety age: icekeeper refuses
// an age under 24 hours, icekeeper.orphans.older-than's floor, so the files
// are aged instead of the age shortened).
//
// Each operation returns a one-line description for the history, or
// errSkip when the table offers it nothing to act on.

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/optin"
)

// sTable is one table of a safety run.
type sTable struct {
	name  string
	ident table.Identifier
	// role: "primary" (t), "neighbour" (t2: a sibling location sharing
	// t's name as a string prefix) or "nested" (located inside t's data/).
	role string
	// parts is the number of region partitions (0: unpartitioned).
	parts int
	// ids are every id appended, region each one's region (the equality
	// key of a partitioned table's equality deletes).
	ids    []int64
	region map[int64]string
	// staged are data files another tool wrote and has not committed yet
	// (a write in flight), with the ids they hold.
	staged    []iceberg.DataFile
	stagedIDs []int64
}

// safetyNS is the namespace of every table of a run.
const safetyNS = "demo"

// createTables creates the run's tables: t always; t2 (a neighbour) and
// nested (inside t's data/ folder) as the seed says; each with properties
// drawn from the seed (format version, partitions, retention, gzip
// metadata, old metadata files deleted after commit, object storage
// layout, a write.data.path elsewhere).
func (r *safetyRun) createTables() {
	e := r.e
	if err := e.cat.CreateNamespace(e.ctx, table.Identifier{safetyNS}, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		r.t.Fatalf("create namespace: %v", err)
	}
	r.createTable("t", "primary", "")
	if r.rng.IntN(10) < 7 {
		r.createTable("t2", "neighbour", "")
	}
	if r.rng.IntN(10) < 7 {
		r.createTable("nested", "nested", strings.TrimSuffix(r.tables[0].location(r), "/")+"/data/nested")
	}
	if r.s3 != nil {
		r.createS3Tables()
	}
}

// createTable creates one table (location "": the catalog's default).
func (r *safetyRun) createTable(name, role, location string) {
	e := r.e
	st := &sTable{name: safetyNS + "." + name, ident: table.Identifier{safetyNS, name}, role: role, region: map[int64]string{}}
	version := 2 + r.rng.IntN(2)
	st.parts = []int{0, 1, 2, 3}[r.rng.IntN(4)]
	props := iceberg.Properties{
		"format-version":                          strconv.Itoa(version),
		table.WriteDeleteModeKey:                  table.WriteModeMergeOnRead,
		"write.update.mode":                       table.WriteModeMergeOnRead,
		"write.merge.mode":                        table.WriteModeMergeOnRead,
		"write.parquet.compression-codec":         "zstd",
		optin.PropertyRewriteDeletesMinInputFiles: "2",
		table.ManifestMinMergeCountKey:            "3",
		table.MinSnapshotsToKeepKey:               strconv.Itoa(1 + r.rng.IntN(3)),
		table.MaxSnapshotAgeMsKey:                 []string{"1", "1", "1", "3600000"}[r.rng.IntN(4)],
	}
	var traits []string
	if r.rng.IntN(10) < 3 || role == "nested" && r.rng.IntN(2) == 0 {
		props[table.MetadataCompressionKey] = "gzip"
		traits = append(traits, "gzip metadata")
	}
	if r.rng.IntN(10) < 3 {
		props[table.MetadataDeleteAfterCommitEnabledKey] = "true"
		props[table.MetadataPreviousVersionsMaxKey] = strconv.Itoa(1 + r.rng.IntN(3))
		traits = append(traits, "old metadata deleted after commit, previous-versions-max "+props[table.MetadataPreviousVersionsMaxKey])
	}
	if r.rng.IntN(4) == 0 {
		props[table.ObjectStoreEnabledKey] = "true"
		traits = append(traits, "object storage layout")
	}
	opts := []catalog.CreateTableOpt{catalog.WithProperties(props)}
	if st.parts > 0 {
		spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Transform: iceberg.IdentityTransform{}, Name: "region"})
		opts = append(opts, catalog.WithPartitionSpec(&spec))
	}
	if location != "" {
		opts = append(opts, catalog.WithLocation(location))
	}
	tbl, err := e.cat.CreateTable(e.ctx, st.ident, sampletable.Schema(), opts...)
	if err != nil {
		r.t.Fatalf("create table %s: %v", st.name, err)
	}
	r.tables = append(r.tables, st)
	if r.rng.IntN(5) == 0 {
		path := r.dataPathElsewhere(tbl)
		txn := tbl.NewTransaction()
		if err := txn.SetProperties(iceberg.Properties{table.WriteDataPathKey: path}); err != nil {
			r.t.Fatal(err)
		}
		if _, err := txn.Commit(e.ctx); err != nil {
			r.t.Fatal(err)
		}
		traits = append(traits, "write.data.path "+path)
	}
	if len(traits) == 0 {
		traits = append(traits, "nothing else")
	}
	r.note("create %s (%s) at %s: v%d, %d partitions, keep %s snapshots, max age %s ms; %s", st.name, role, tbl.Location(), version, st.parts,
		props[table.MinSnapshotsToKeepKey], props[table.MaxSnapshotAgeMsKey], strings.Join(traits, ", "))
}

// dataPathElsewhere is a write.data.path outside the table's location:
// a folder of the warehouse of its own, or one beside the location whose
// name begins with the location's (t-data beside t). A table on S3 gets
// one in its bucket, spelled s3, s3a or s3n.
func (r *safetyRun) dataPathElsewhere(tbl *table.Table) string {
	loc := strings.TrimSuffix(tbl.Location(), "/")
	beside := r.rng.IntN(2) == 0
	if bucket, _, ok := s3Object(loc); ok {
		p := "s3://" + bucket + "/wh/elsewhere/" + path.Base(loc)
		if beside {
			p = loc + "-data"
		}
		return respell(p, s3Schemes[r.rng.IntN(len(s3Schemes))])
	}
	if beside {
		return loc + "-data"
	}
	return strings.TrimSuffix(r.e.cfg.Catalog.Warehouse, "/") + "/elsewhere/" + filepath.Base(loc)
}

func (st *sTable) location(r *safetyRun) string { return r.load(st).Location() }

// load reads a table through the catalog.
func (r *safetyRun) load(st *sTable) *table.Table {
	r.t.Helper()
	tbl, err := r.e.cat.LoadTable(r.e.ctx, st.ident)
	if err != nil {
		r.t.Fatalf("load %s: %v", st.name, err)
	}
	return tbl
}

// tableNamed finds a run's table by its full name.
func (r *safetyRun) tableNamed(name string) *sTable {
	for _, st := range r.tables {
		if st.name == name || strings.Join(st.ident, ".") == name {
			return st
		}
	}
	return nil
}

// otherOp is one kind of change another tool makes to a table.
type otherOp struct {
	name   string
	weight int
	run    func(r *safetyRun, st *sTable) (string, error)
}

// otherOps are the other tools' changes and how often each is drawn.
var otherOps = []otherOp{
	{"append", 30, func(r *safetyRun, st *sTable) (string, error) { return r.opAppend(st, r.pickBranch(st, 4)) }},
	{"position delete", 12, func(r *safetyRun, st *sTable) (string, error) { return r.opDelete(st, r.pickBranch(st, 5)) }},
	{"equality delete", 8, func(r *safetyRun, st *sTable) (string, error) { return r.opEqualityDelete(st, r.pickBranch(st, 5)) }},
	{"overwrite", 6, func(r *safetyRun, st *sTable) (string, error) { return r.opOverwrite(st, r.pickBranch(st, 5)) }},
	{"create tag", 10, func(r *safetyRun, st *sTable) (string, error) { return r.opCreateRef(st, table.TagRef) }},
	{"create branch", 6, func(r *safetyRun, st *sTable) (string, error) { return r.opCreateRef(st, table.BranchRef) }},
	{"move ref", 5, (*safetyRun).opMoveRef},
	{"drop ref", 4, (*safetyRun).opDropRef},
	{"rollback main", 3, (*safetyRun).opRollback},
	{"main to a branch head", 2, (*safetyRun).opMainToBranch},
	{"iceberg-go expiry", 3, (*safetyRun).opOtherExpiry},
	{"table properties", 3, (*safetyRun).opProperties},
	{"plant strays", 4, (*safetyRun).opPlant},
	{"stage a file", 3, (*safetyRun).opStage},
	{"attach statistics", 2, (*safetyRun).opStatistics},
	{"commit staged files", 3, (*safetyRun).opCommitStaged},
	{"time passes", 4, func(r *safetyRun, _ *sTable) (string, error) { return r.opAge() }},
}

// laterOps are changes added to the harness after seeds were kept as
// regressions: drawn with otherOps by every seed but those
// (safetyFixedSeedsBefore), whose histories, and so the failures they
// replay, would otherwise change.
var laterOps = []otherOp{
	{"cherry-pick a branch's append", 3, (*safetyRun).opCherryPick},
}

// undoOps came after laterOps: drawn by every seed but the fixed ones kept
// before them (safetyFixedSeedsBefore and safetyFixedSeedsLater).
var undoOps = []otherOp{
	{"undo: the catalog back at an older metadata file", 3, (*safetyRun).opUndo},
}

// opUndo is another tool undoing a table's last commits: the catalog
// pointed back at one of the three newest metadata files of its log (an
// operator restoring it, or Iceberg Java's register_table after a drop).
// Whatever that metadata file's snapshots need is then needed again,
// including what an expiry of icekeeper's in flight freed; files already
// gone are the other tool's doing (the model excuses them).
func (r *safetyRun) opUndo(st *sTable) (string, error) {
	tbl := r.load(st)
	var older []string
	for e := range tbl.Metadata().PreviousFiles() {
		older = append(older, e.MetadataFile)
	}
	if len(older) == 0 {
		return "", errSkip
	}
	to := older[len(older)-1-r.rng.IntN(min(len(older), 3))]
	md := r.model.readMeta(to)
	if md == nil {
		return "", errSkip // removed after commit by the writer
	}
	// Only a whole table is restored: one whose files an expiry already
	// deleted is not the undo this op is about (it would only break the
	// table, whoever deleted them).
	whole := true
	for _, s := range md.Snapshots() {
		r.model.snapshotFiles(s, "", func(p, _ string) {
			if ok, err := r.fileExists(p); err != nil || !ok {
				whole = false
			}
		})
	}
	if !whole {
		return "", errSkip
	}
	if err := r.e.repointTable(st.ident, to); err != nil {
		return "", err
	}
	return fmt.Sprintf("undo %s: the catalog back at %s", st.name, filepath.Base(to)), nil
}

// concurrentOps are the changes drawn right before an icekeeper commit
// (the committer's before-commit hook): mostly refs on snapshots that an
// expiry may be removing, and writes.
var concurrentOps = []otherOp{
	{"create tag", 12, func(r *safetyRun, st *sTable) (string, error) { return r.opCreateRef(st, table.TagRef) }},
	{"create branch", 6, func(r *safetyRun, st *sTable) (string, error) { return r.opCreateRef(st, table.BranchRef) }},
	{"move ref", 4, (*safetyRun).opMoveRef},
	{"drop ref", 2, (*safetyRun).opDropRef},
	{"append", 6, func(r *safetyRun, st *sTable) (string, error) { return r.opAppend(st, r.pickBranch(st, 4)) }},
	{"position delete", 3, func(r *safetyRun, st *sTable) (string, error) { return r.opDelete(st, "") }},
	{"commit staged files", 3, (*safetyRun).opCommitStaged},
	{"rollback main", 1, (*safetyRun).opRollback},
}

// pickOp draws one operation by weight.
func (r *safetyRun) pickOp(ops []otherOp) otherOp {
	total := 0
	for _, o := range ops {
		total += o.weight
	}
	n := r.rng.IntN(total)
	for _, o := range ops {
		if n < o.weight {
			return o
		}
		n -= o.weight
	}
	return ops[len(ops)-1]
}

// pickBranch returns "" (main) or, one time in n, one of the table's
// other branches (when it has any).
func (r *safetyRun) pickBranch(st *sTable, n int) string {
	if r.rng.IntN(n) != 0 {
		return ""
	}
	var branches []string
	meta := r.load(st).Metadata()
	for _, name := range sortedRefs(meta) {
		if ref, _ := refOf(meta, name); name != table.MainBranch && ref.SnapshotRefType == table.BranchRef {
			branches = append(branches, name)
		}
	}
	if len(branches) == 0 {
		return ""
	}
	return branches[r.rng.IntN(len(branches))]
}

// sortedRefs lists a metadata's ref names in order (map order would make
// the seed's choices differ between runs).
func sortedRefs(meta table.Metadata) []string {
	var names []string
	for name := range meta.Refs() {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// refOf returns the named ref of meta.
func refOf(meta table.Metadata, name string) (table.SnapshotRef, bool) {
	for n, ref := range meta.Refs() {
		if n == name {
			return ref, true
		}
	}
	return table.SnapshotRef{}, false
}

// txnOn opens a transaction on main ("") or a branch.
func txnOn(tbl *table.Table, branch string) *table.Transaction {
	if branch == "" {
		return tbl.NewTransaction()
	}
	return tbl.NewTransactionOnBranch(branch)
}

func onBranch(branch string) string {
	if branch == "" {
		return "main"
	}
	return "branch " + branch
}

// newRows builds rows with fresh ids: rowsPer per partition (one file each).
func (r *safetyRun) newRows(st *sTable, rowsPer int) (array.RecordReader, []int64, error) {
	parts := max(st.parts, 1)
	first := r.nextID
	r.nextID += int64(parts * rowsPer)
	rdr, err := sampletable.Rows(first, parts, rowsPer)
	if err != nil {
		return nil, nil, err
	}
	var ids []int64
	for p := range parts {
		for i := range rowsPer {
			id := first + int64(p*rowsPer+i)
			ids = append(ids, id)
			st.region[id] = sampletable.Region(p)
		}
	}
	return rdr, ids, nil
}

// opAppend appends a few small files (one per partition).
func (r *safetyRun) opAppend(st *sTable, branch string) (string, error) {
	rdr, ids, err := r.newRows(st, 3+r.rng.IntN(12))
	if err != nil {
		return "", err
	}
	defer rdr.Release()
	txn := txnOn(r.load(st), branch)
	if err := txn.Append(r.e.ctx, rdr, nil); err != nil {
		return "", err
	}
	if _, err := txn.Commit(r.e.ctx); err != nil {
		return "", err
	}
	st.ids = append(st.ids, ids...)
	return fmt.Sprintf("append ids %d..%d to %s of %s", ids[0], ids[len(ids)-1], onBranch(branch), st.name), nil
}

// pickIDs draws up to n distinct ids the table was given (most still
// live at its refs; a delete of a gone one deletes nothing).
func (r *safetyRun) pickIDs(st *sTable, n int) []int64 {
	if len(st.ids) == 0 {
		return nil
	}
	seen := map[int64]bool{}
	var out []int64
	for range n {
		id := st.ids[r.rng.IntN(len(st.ids))]
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// opDelete deletes a few rows with a merge-on-read delete (position
// deletes on v2, deletion vectors on v3; a file whose rows all go is
// dropped whole).
func (r *safetyRun) opDelete(st *sTable, branch string) (string, error) {
	ids := r.pickIDs(st, 1+r.rng.IntN(4))
	if len(ids) == 0 {
		return "", errSkip
	}
	txn := txnOn(r.load(st), branch)
	if err := txn.Delete(r.e.ctx, iceberg.IsIn(iceberg.Reference("id"), ids...), nil); err != nil {
		return "", err
	}
	if _, err := txn.Commit(r.e.ctx); err != nil {
		return "", err
	}
	return fmt.Sprintf("delete ids %v from %s of %s", ids, onBranch(branch), st.name), nil
}

// opEqualityDelete deletes a few ids with an equality delete (keyed on
// id, and on region in a partitioned table).
func (r *safetyRun) opEqualityDelete(st *sTable, branch string) (string, error) {
	ids := r.pickIDs(st, 1+r.rng.IntN(4))
	if len(ids) == 0 {
		return "", errSkip
	}
	var regionOf func(int64) string
	if st.parts > 0 {
		regionOf = func(id int64) string { return st.region[id] }
	}
	txn := txnOn(r.load(st), branch)
	if err := sampletable.StageEqualityDelete(r.e.ctx, txn, ids, regionOf); err != nil {
		return "", err
	}
	if _, err := txn.Commit(r.e.ctx); err != nil {
		return "", err
	}
	return fmt.Sprintf("equality delete of ids %v on %s of %s", ids, onBranch(branch), st.name), nil
}

// opOverwrite deletes a few rows and appends new ones in one commit.
func (r *safetyRun) opOverwrite(st *sTable, branch string) (string, error) {
	ids := r.pickIDs(st, 1+r.rng.IntN(3))
	if len(ids) == 0 {
		return "", errSkip
	}
	rdr, added, err := r.newRows(st, 2+r.rng.IntN(4))
	if err != nil {
		return "", err
	}
	defer rdr.Release()
	txn := txnOn(r.load(st), branch)
	if err := txn.Delete(r.e.ctx, iceberg.IsIn(iceberg.Reference("id"), ids...), nil); err != nil {
		return "", err
	}
	if err := txn.Append(r.e.ctx, rdr, nil); err != nil {
		return "", err
	}
	if _, err := txn.Commit(r.e.ctx); err != nil {
		return "", err
	}
	st.ids = append(st.ids, added...)
	return fmt.Sprintf("overwrite ids %v with ids %d..%d on %s of %s", ids, added[0], added[len(added)-1], onBranch(branch), st.name), nil
}

// pickSnapshot draws a snapshot of the table: mostly one no ref points at
// (an old one, as a tag for an audit would), else any; except skips one.
func (r *safetyRun) pickSnapshot(meta table.Metadata, except int64) (table.Snapshot, bool) {
	referenced := map[int64]bool{}
	for _, ref := range meta.Refs() {
		referenced[ref.SnapshotID] = true
	}
	var free, all []table.Snapshot
	for _, s := range meta.Snapshots() {
		if s.SnapshotID == except {
			continue
		}
		all = append(all, s)
		if !referenced[s.SnapshotID] {
			free = append(free, s)
		}
	}
	switch {
	case len(free) > 0 && r.rng.IntN(4) > 0:
		return free[r.rng.IntN(len(free))], true
	case len(all) > 0:
		return all[r.rng.IntN(len(all))], true
	}
	return table.Snapshot{}, false
}

// opCreateRef creates a tag or branch on a snapshot; one in four is given
// a max-ref-age of 1 ms (the next expiry drops it) and some branches keep
// two snapshots.
func (r *safetyRun) opCreateRef(st *sTable, kind table.RefType) (string, error) {
	tbl := r.load(st)
	snap, ok := r.pickSnapshot(tbl.Metadata(), 0)
	if !ok {
		return "", errSkip
	}
	r.refSeq++
	name := fmt.Sprintf("%s%d", map[table.RefType]string{table.TagRef: "tag", table.BranchRef: "branch"}[kind], r.refSeq)
	var maxRefAge int64
	minKeep := 0
	if r.rng.IntN(4) == 0 {
		maxRefAge = 1
	}
	if kind == table.BranchRef && r.rng.IntN(3) == 0 {
		minKeep = 2
	}
	_, _, err := r.e.cat.CommitTable(r.e.ctx, st.ident, []table.Requirement{table.AssertRefSnapshotID(name, nil)},
		[]table.Update{table.NewSetSnapshotRefUpdate(name, snap.SnapshotID, kind, maxRefAge, 0, minKeep)})
	if err != nil {
		return "", err
	}
	extra := ""
	if maxRefAge > 0 {
		extra += ", max-ref-age 1 ms"
	}
	if minKeep > 0 {
		extra += ", keeps 2 snapshots"
	}
	return fmt.Sprintf("create %s %s of %s on snapshot %d%s", kind, name, st.name, snap.SnapshotID, extra), nil
}

// pickRef draws a ref other than main (kind "" for either kind).
func (r *safetyRun) pickRef(meta table.Metadata, kind table.RefType) (string, table.SnapshotRef, bool) {
	var names []string
	for _, name := range sortedRefs(meta) {
		ref, _ := refOf(meta, name)
		if name != table.MainBranch && (kind == "" || ref.SnapshotRefType == kind) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return "", table.SnapshotRef{}, false
	}
	name := names[r.rng.IntN(len(names))]
	ref, _ := refOf(meta, name)
	return name, ref, true
}

// opMoveRef points a tag or branch at another snapshot.
func (r *safetyRun) opMoveRef(st *sTable) (string, error) {
	meta := r.load(st).Metadata()
	name, ref, ok := r.pickRef(meta, "")
	if !ok {
		return "", errSkip
	}
	snap, ok := r.pickSnapshot(meta, ref.SnapshotID)
	if !ok {
		return "", errSkip
	}
	id := ref.SnapshotID
	_, _, err := r.e.cat.CommitTable(r.e.ctx, st.ident, []table.Requirement{table.AssertRefSnapshotID(name, &id)},
		[]table.Update{table.NewSetSnapshotRefUpdate(name, snap.SnapshotID, ref.SnapshotRefType, ptrOr(ref.MaxRefAgeMs), ptrOr(ref.MaxSnapshotAgeMs), int(ptrOr(ref.MinSnapshotsToKeep)))})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("move %s %s of %s from snapshot %d to %d", ref.SnapshotRefType, name, st.name, id, snap.SnapshotID), nil
}

func ptrOr[T int | int64](p *T) int64 {
	if p == nil {
		return 0
	}
	return int64(*p)
}

// opDropRef removes a tag or branch.
func (r *safetyRun) opDropRef(st *sTable) (string, error) {
	meta := r.load(st).Metadata()
	name, ref, ok := r.pickRef(meta, "")
	if !ok {
		return "", errSkip
	}
	id := ref.SnapshotID
	_, _, err := r.e.cat.CommitTable(r.e.ctx, st.ident, []table.Requirement{table.AssertRefSnapshotID(name, &id)},
		[]table.Update{table.NewRemoveSnapshotRefUpdate(name)})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("drop %s %s of %s (snapshot %d)", ref.SnapshotRefType, name, st.name, id), nil
}

// opRollback rolls main back to one of its ancestors.
func (r *safetyRun) opRollback(st *sTable) (string, error) {
	tbl := r.load(st)
	head := tbl.CurrentSnapshot()
	if head == nil {
		return "", errSkip
	}
	meta := tbl.Metadata()
	var ancestors []int64
	for s := head; s != nil && s.ParentSnapshotID != nil; {
		s = meta.SnapshotByID(*s.ParentSnapshotID)
		if s != nil {
			ancestors = append(ancestors, s.SnapshotID)
		}
	}
	if len(ancestors) == 0 {
		return "", errSkip
	}
	to := ancestors[r.rng.IntN(min(len(ancestors), 4))]
	txn := tbl.NewTransaction()
	if err := txn.RollbackToSnapshot(to); err != nil {
		return "", err
	}
	if _, err := txn.Commit(r.e.ctx); err != nil {
		return "", err
	}
	return fmt.Sprintf("roll main of %s back from snapshot %d to %d", st.name, head.SnapshotID, to), nil
}

// opMainToBranch points main at another branch's head.
func (r *safetyRun) opMainToBranch(st *sTable) (string, error) {
	tbl := r.load(st)
	head := tbl.CurrentSnapshot()
	name, ref, ok := r.pickRef(tbl.Metadata(), table.BranchRef)
	if !ok || head == nil || ref.SnapshotID == head.SnapshotID {
		return "", errSkip
	}
	id := head.SnapshotID
	_, _, err := r.e.cat.CommitTable(r.e.ctx, st.ident, []table.Requirement{table.AssertRefSnapshotID(table.MainBranch, &id)},
		[]table.Update{table.NewSetSnapshotRefUpdate(table.MainBranch, ref.SnapshotID, table.BranchRef, 0, 0, 0)})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("point main of %s at branch %s's head %d (was %d)", st.name, name, ref.SnapshotID, id), nil
}

// opCherryPick cherry-picks the head snapshot of another branch onto main
// when it is an append, as Spark's cherrypick_snapshot procedure does
// (Iceberg Java's CherryPickOperation): main gets a new snapshot adding the
// same data files, named by the source-snapshot-id summary property. The
// branch's snapshot and main's then share those files: expiring one of
// the two snapshots frees none of them.
func (r *safetyRun) opCherryPick(st *sTable) (string, error) {
	tbl := r.load(st)
	name, ref, ok := r.pickRef(tbl.Metadata(), table.BranchRef)
	if !ok {
		return "", errSkip
	}
	snap := tbl.Metadata().SnapshotByID(ref.SnapshotID)
	if snap == nil || snap.Summary == nil || snap.Summary.Operation != table.OpAppend {
		return "", errSkip
	}
	fsys, err := tbl.FS(r.e.ctx)
	if err != nil {
		return "", err
	}
	mfs, err := snap.Manifests(fsys)
	if err != nil {
		return "", err
	}
	var added []iceberg.DataFile
	for _, m := range mfs {
		if m.SnapshotID() != snap.SnapshotID || m.ManifestContent() != iceberg.ManifestContentData {
			continue
		}
		entries, err := m.FetchEntries(fsys, true)
		if err != nil {
			return "", err
		}
		for _, en := range entries {
			if en.Status() == iceberg.EntryStatusADDED && en.SnapshotID() == snap.SnapshotID {
				added = append(added, en.DataFile())
			}
		}
	}
	if len(added) == 0 {
		return "", errSkip
	}
	txn := tbl.NewTransaction()
	if err := txn.AddDataFiles(r.e.ctx, added, iceberg.Properties{"source-snapshot-id": strconv.FormatInt(snap.SnapshotID, 10)}); err != nil {
		if strings.Contains(err.Error(), "already referenced") {
			return "", errSkip // main has them already
		}
		return "", err
	}
	if _, err := txn.Commit(r.e.ctx); err != nil {
		return "", err
	}
	return fmt.Sprintf("cherry-pick %s's head %d (%d files) onto main of %s", name, snap.SnapshotID, len(added), st.name), nil
}

// opOtherExpiry is another tool's snapshot expiry: iceberg-go's own, which
// deletes the files it frees once its commit lands.
func (r *safetyRun) opOtherExpiry(st *sTable) (string, error) {
	tbl := r.load(st)
	keep := 1 + r.rng.IntN(3)
	older := []time.Duration{time.Millisecond, time.Hour}[r.rng.IntN(2)]
	before := len(tbl.Metadata().Snapshots())
	txn := tbl.NewTransaction()
	if err := txn.ExpireSnapshots(table.WithRetainLast(keep), table.WithOlderThan(older)); err != nil {
		return "", err
	}
	after, err := txn.Commit(r.e.ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("iceberg-go expires snapshots of %s (retain last %d, older than %s): %d -> %d snapshots", st.name, keep, older, before, len(after.Metadata().Snapshots())), nil
}

// opProperties changes one of the table's storage properties.
func (r *safetyRun) opProperties(st *sTable) (string, error) {
	tbl := r.load(st)
	props := tbl.Properties()
	set, unset := iceberg.Properties{}, []string{}
	toggle := func(key, on string) {
		if props[key] != "" {
			unset = append(unset, key)
		} else {
			set[key] = on
		}
	}
	switch r.rng.IntN(5) {
	case 0:
		toggle(table.MetadataCompressionKey, "gzip")
	case 1:
		if props[table.MetadataDeleteAfterCommitEnabledKey] == "true" {
			unset = append(unset, table.MetadataDeleteAfterCommitEnabledKey, table.MetadataPreviousVersionsMaxKey)
		} else {
			set[table.MetadataDeleteAfterCommitEnabledKey] = "true"
			set[table.MetadataPreviousVersionsMaxKey] = strconv.Itoa(1 + r.rng.IntN(3))
		}
	case 2:
		toggle(table.ObjectStoreEnabledKey, "true")
	case 3:
		toggle(table.WriteDataPathKey, r.dataPathElsewhere(tbl))
	case 4:
		set[table.MinSnapshotsToKeepKey] = strconv.Itoa(1 + r.rng.IntN(3))
		set[table.MaxSnapshotAgeMsKey] = []string{"1", "1", "3600000"}[r.rng.IntN(3)]
	}
	txn := tbl.NewTransaction()
	if len(set) > 0 {
		if err := txn.SetProperties(set); err != nil {
			return "", err
		}
	}
	if len(unset) > 0 {
		if err := txn.RemoveProperties(unset); err != nil {
			return "", err
		}
	}
	if _, err := txn.Commit(r.e.ctx); err != nil {
		return "", err
	}
	return fmt.Sprintf("set properties of %s: %v, unset %v", st.name, set, unset), nil
}

// opStage is another tool's write in flight: it writes a data file into
// the table's data location and commits it later (opCommitStaged). Until
// then the file is young and referenced by nothing: the model keeps it
// needed (an orphan cleanup must leave files younger than its safety age
// alone), until time passes (opAge), when it is an orphan like any other.
func (r *safetyRun) opStage(st *sTable) (string, error) {
	tbl := r.load(st)
	rdr, ids, err := r.newRows(st, 2+r.rng.IntN(5))
	if err != nil {
		return "", err
	}
	defer rdr.Release()
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return "", err
	}
	var batches []arrow.RecordBatch
	for rdr.Next() {
		rec := rdr.RecordBatch()
		batches = append(batches, array.NewRecordBatch(sc, rec.Columns(), rec.NumRows()))
	}
	recs := func(yield func(arrow.RecordBatch, error) bool) {
		for _, b := range batches {
			if !yield(b, nil) {
				return
			}
		}
	}
	var paths []string
	for df, err := range table.WriteRecords(r.e.ctx, tbl, sc, recs) {
		if err != nil {
			return "", err
		}
		st.staged = append(st.staged, df)
		paths = append(paths, df.FilePath())
		r.model.keep[df.FilePath()] = "a young data file another tool wrote into " + st.name + " and has not committed yet"
	}
	st.stagedIDs = append(st.stagedIDs, ids...)
	return fmt.Sprintf("another tool writes ids %d..%d of %s into %v, to commit later", ids[0], ids[len(ids)-1], st.name, paths), nil
}

// opCommitStaged commits the files staged in the table (opStage).
func (r *safetyRun) opCommitStaged(st *sTable) (string, error) {
	if len(st.staged) == 0 {
		return "", errSkip
	}
	var paths []string
	for _, df := range st.staged {
		paths = append(paths, df.FilePath())
	}
	txn := r.load(st).NewTransaction()
	if err := txn.AddFiles(r.e.ctx, paths, nil, false); err != nil {
		return "", err
	}
	if _, err := txn.Commit(r.e.ctx); err != nil {
		return "", err
	}
	n := len(st.staged)
	for _, df := range st.staged {
		delete(r.model.keep, df.FilePath())
	}
	st.ids = append(st.ids, st.stagedIDs...)
	st.staged, st.stagedIDs = nil, nil
	return fmt.Sprintf("another tool commits the %d files it staged in %s", n, st.name), nil
}

// opStatistics attaches a statistics file (or a partition statistics
// file) to one of the table's snapshots, as an engine computing column
// statistics would: a file under metadata/ that only the table metadata
// references.
func (r *safetyRun) opStatistics(st *sTable) (string, error) {
	tbl := r.load(st)
	snap, ok := r.pickSnapshot(tbl.Metadata(), 0)
	if !ok {
		return "", errSkip
	}
	r.plantSeq++
	partition := r.rng.IntN(3) == 0
	name := fmt.Sprintf("metadata/stats-%d-%d.puffin", snap.SnapshotID, r.plantSeq)
	if partition {
		name = fmt.Sprintf("metadata/partition-stats-%d-%d.parquet", snap.SnapshotID, r.plantSeq)
	}
	p := strings.TrimSuffix(tbl.Location(), "/") + "/" + name
	if _, _, ok := s3Object(p); ok && r.rng.IntN(2) == 0 {
		p = respell(p, "s3a") // an engine writing through Hadoop's S3A
	}
	body := []byte("PFA1 statistics of another engine PFA1")
	if err := r.writeFile(p, body); err != nil {
		return "", err
	}
	var u table.Update = table.NewSetStatisticsUpdate(table.StatisticsFile{SnapshotID: snap.SnapshotID, StatisticsPath: p,
		FileSizeInBytes: int64(len(body)), FileFooterSizeInBytes: 4, BlobMetadata: []table.BlobMetadata{}})
	if partition {
		u = table.NewSetPartitionStatisticsUpdate(table.PartitionStatisticsFile{SnapshotID: snap.SnapshotID, StatisticsPath: p, FileSizeInBytes: int64(len(body))})
	}
	if _, _, err := r.e.cat.CommitTable(r.e.ctx, st.ident, nil, []table.Update{u}); err != nil {
		return "", err
	}
	return fmt.Sprintf("attach %s to snapshot %d of %s", name, snap.SnapshotID, st.name), nil
}

// opPlant plants stray files: orphans under data/ and metadata/ (which an
// orphan cleanup may delete once they are old) and, one time in three, a
// file elsewhere under the location, which nothing of icekeeper may ever
// delete (the model keeps it needed).
func (r *safetyRun) opPlant(st *sTable) (string, error) {
	loc := strings.TrimSuffix(r.load(st).Location(), "/")
	root := strings.TrimPrefix(loc, "file://")
	r.plantSeq++
	n := r.plantSeq
	rels := []string{
		fmt.Sprintf("data/00000-%d-stray.parquet", n),
		fmt.Sprintf("data/region=%s/00000-%d-stray.parquet", sampletable.Region(r.rng.IntN(3)), n),
		fmt.Sprintf("metadata/stray-%d-m0.avro", n),
		fmt.Sprintf("metadata/%05d-stray.metadata.json", n),
	}
	all := rels
	rels = rels[r.rng.IntN(len(rels)):]
	_, _, onS3 := s3Object(loc)
	if onS3 && r.rng.IntN(4) > 0 {
		// A stray metadata.json refuses every later orphan cleanup of the
		// table: the S3 tables are there for their cleanups over s3a and
		// s3n names, so theirs get one one time in four.
		rels = all[r.rng.IntN(len(all)-1) : len(all)-1]
	}
	var kept []string
	if r.rng.IntN(3) == 0 {
		kept = append(kept, []string{fmt.Sprintf("scratch/notes-%d.txt", n), fmt.Sprintf("top-stray-%d.bin", n)}[r.rng.IntN(2)])
	}
	at := func(rel string) string {
		if onS3 {
			return loc + "/" + rel
		}
		return "file://" + filepath.Join(root, rel)
	}
	for _, rel := range append(slices.Clone(rels), kept...) {
		if err := r.writeFile(at(rel), []byte("stray")); err != nil {
			return "", err
		}
	}
	for _, rel := range kept {
		r.model.keep[at(rel)] = "a stray file outside data/ and metadata/ of " + st.name
	}
	return fmt.Sprintf("plant strays under %s: %v, outside data/ and metadata/: %v", st.name, rels, kept), nil
}

// opAge is time passing: every file under the warehouse, and every
// object of the run's bucket (through s3Clock), ages by four days, past the default orphan safety age (72h); files written from now
// on are young until the next time.
func (r *safetyRun) opAge() (string, error) {
	root := strings.TrimPrefix(r.e.cfg.Catalog.Warehouse, "file://")
	n := 0
	err := filepath.WalkDir(root, func(p string, d iofs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		when := info.ModTime().Add(-96 * time.Hour)
		n++
		return os.Chtimes(p, when, when)
	})
	if err != nil {
		return "", err
	}
	if r.s3 != nil {
		aged, err := r.s3.clock.ageAll(r.e.ctx, r.s3.bucket, 96*time.Hour)
		if err != nil {
			return "", err
		}
		n += aged
	}
	// A write still in flight after four days is abandoned: its files are
	// orphans now.
	abandoned := 0
	for _, st := range r.tables {
		for _, df := range st.staged {
			delete(r.model.keep, df.FilePath())
		}
		abandoned += len(st.staged)
		st.staged, st.stagedIDs = nil, nil
	}
	return fmt.Sprintf("four days pass: %d files age (%d staged files abandoned)", n, abandoned), nil
}
