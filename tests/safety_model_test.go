package tests

// The model of the safety harness (see safety_test.go): an account, kept
// by the harness alone, of what every table still needs on storage, and
// of what each ref of each table must read. It calls none of icekeeper's
// decision packages (shared/expire's selection and file lists,
// shared/health's orphan functions): it walks the metadata with
// iceberg-go's readers, applies Iceberg's retention rules as the spec and
// iceberg-go state them, and reads icekeeper's job records and plans only
// to know what icekeeper said it would do.
//
// Needed, after every step, are:
//
//   - each table's current metadata file and every metadata file in its
//     metadata log;
//   - for every snapshot in the current metadata, and every snapshot of
//     every metadata file in the log that no decided expiry removed
//     (another tool's expiry, or an icekeeper expiry that planned it and
//     was allowed to: see judge), its manifest list, its manifests, the
//     data and delete files (deletion vectors too) their live entries
//     name, and its statistics and partition statistics files (an
//     expiry's whole point is to free what only the snapshots it removes
//     use, though the older metadata files of the log still list them:
//     only a removal nobody decided leaves them needed);
//   - the snapshot of every ref the model expects (including refs
//     icekeeper dropped without deciding to: their snapshots stay needed);
//   - for every icekeeper job in flight (its record not ended) that reads
//     a pinned snapshot (compaction, delete-file and manifest rewrites):
//     the pinned metadata file, the pinned snapshot, and the new files of
//     every group its rewriters settled (the winning descriptors);
//   - the files another tool wrote and has not committed yet (a write in
//     flight, younger than the orphan safety age), and the stray files
//     planted outside data/ and metadata/, which no icekeeper action may
//     delete;
//
// for every table, whichever table's location they are under. A needed
// file that goes missing during another tool's step was deleted by that
// tool (iceberg-go's expiry deletes what it frees; a writer with
// write.metadata.delete-after-commit.enabled deletes old metadata files):
// it is excused and noted. One that goes missing during an icekeeper step
// is a failure.
//
// The refs: after another tool's step, the model takes the table's refs
// as they are and fingerprints the rows each one reads (package
// fingerprint, cached per snapshot, as a snapshot's rows never change).
// After an icekeeper step every expected ref must still be there, on the
// same snapshot, except that main may move to a snapshot that reads the
// same rows (a compaction's, a rewrite's), and an expiry may drop a ref
// it planned to drop whose snapshot is older than the ref's max-ref-age.
// A snapshot an icekeeper step removes must be one an expiry of the table
// planned to remove and that nothing protected at that moment: no
// expected ref's head, within a branch's retention (its newest
// min-snapshots-to-keep, and those younger than max-snapshot-age, walking
// back from the head until the first that is neither, or the first
// ancestor already gone from the metadata), not younger than the table's
// max-snapshot-age when no branch reaches it, not pinned by an icekeeper
// job in flight.

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/harness/fingerprint"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/messages"
)

// Actors of a step: another tool, or icekeeper.
const (
	actorOther     = "other"
	actorIcekeeper = "icekeeper"
)

// Failure categories of the safety harness.
const (
	catNeeded        = "needed files deleted"
	catSafeSnapshots = "snapshots removed while protected"
	catSafeRefs      = "refs dropped or moved"
	catRowsAtRef     = "rows read at a ref changed"
	catNeverEnds     = "jobs that never end"
)

var safetyCategories = []string{catNeeded, catSafeSnapshots, catSafeRefs, catRowsAtRef, catNeverEnds}

// safetyModel is the harness's account of what is needed (see the file
// comment).
type safetyModel struct {
	r *safetyRun
	// fs are the file IOs the model reads manifests with, by file system
	// ("file", or "s3" for every spelling of the s3 family).
	fs map[string]icebergio.IO
	// metas, lists and entries cache what immutable files hold: parsed
	// metadata files, manifest lists' manifests, manifests' live files.
	metas   map[string]table.Metadata
	lists   map[string][]iceberg.ManifestFile
	entries map[string][]string
	// excused are needed files another tool deleted (path -> its step);
	// reported, those already reported missing.
	excused  map[string]string
	reported map[string]bool
	// keep are planted files no icekeeper action may delete.
	keep   map[string]string
	tables []*tableModel
	// fps caches the rows of a snapshot ("table#snapshot").
	fps map[string]fpResult
	// jobs are every icekeeper job planned, in order.
	jobs     map[string]*jobModel
	jobOrder []string
}

type fpResult struct {
	fp  fingerprint.Fingerprint
	err error
}

// tableModel is what the model expects of one table.
type tableModel struct {
	st *sTable
	// refs are the refs expected, with the rows each reads.
	refs map[string]expRef
	// lost are refs icekeeper dropped without deciding to (name ->
	// snapshot): their snapshots stay needed.
	lost map[string]int64
	// known is every snapshot ever seen; present, those in the current
	// metadata at the last check; retired, those a decided expiry removed
	// (id -> by whom); wronged, those icekeeper removed while protected.
	known   map[int64]table.Snapshot
	present map[int64]bool
	retired map[int64]string
	wronged map[int64]bool
}

// expRef is an expected ref and the rows it reads.
type expRef struct {
	ref table.SnapshotRef
	fp  fpResult
}

// jobModel is what the model knows of one icekeeper job.
type jobModel struct {
	id, table string
	kind      jobs.Kind
	state     jobs.State
	reason    string
	terminal  bool
	metaLoc   string
	snapshot  int64
	// expire and removeRefs are an expiry's plan.
	expire     map[int64]bool
	removeRefs map[string]bool
	// outputs are the new files of the groups settled so far (descriptor
	// key -> paths).
	outputs map[string][]string
}

func newSafetyModel(r *safetyRun) *safetyModel {
	return &safetyModel{r: r, fs: map[string]icebergio.IO{}, metas: map[string]table.Metadata{}, lists: map[string][]iceberg.ManifestFile{}, entries: map[string][]string{},
		excused: map[string]string{}, reported: map[string]bool{}, keep: map[string]string{}, fps: map[string]fpResult{}, jobs: map[string]*jobModel{}}
}

// addTable starts expecting a table.
func (m *safetyModel) addTable(st *sTable) {
	m.tables = append(m.tables, &tableModel{st: st, refs: map[string]expRef{}, lost: map[string]int64{}, known: map[int64]table.Snapshot{},
		present: map[int64]bool{}, retired: map[int64]string{}, wronged: map[int64]bool{}})
}

// track starts following an icekeeper job.
func (m *safetyModel) track(id string) {
	if id == "" || m.jobs[id] != nil {
		return
	}
	j, err := m.r.e.deps.Jobs.Get(m.r.e.ctx, id)
	if err != nil {
		if !errors.Is(err, jobs.ErrNotFound) {
			m.r.t.Fatalf("read job %s: %v", id, err)
		}
		return
	}
	jm := &jobModel{id: id, table: j.Table, kind: j.Kind, state: j.State, reason: j.Reason, terminal: j.State.Terminal(),
		metaLoc: j.MetadataLocation, snapshot: j.SnapshotID, outputs: map[string][]string{}}
	if j.Kind == jobs.KindExpire {
		jm.expire, jm.removeRefs = map[int64]bool{}, map[string]bool{}
		b, err := m.r.e.deps.Blobs.Get(m.r.e.ctx, j.PlanKey)
		if err != nil {
			m.r.t.Fatalf("read expiry plan of %s: %v", id, err)
		}
		var p messages.ExpiryPlan
		if err := messages.Decode(b, &p); err != nil {
			m.r.t.Fatalf("decode expiry plan of %s: %v", id, err)
		}
		for _, s := range messages.Int64s(p.Expire) {
			jm.expire[s] = true
		}
		for _, name := range p.RemoveRefs {
			jm.removeRefs[name] = true
		}
	}
	m.jobs[id] = jm
	m.jobOrder = append(m.jobOrder, id)
}

// readsPin says whether a job kind reads its pinned snapshot.
func readsPin(k jobs.Kind) bool {
	return k == jobs.KindCompaction || k == jobs.KindRewriteDeletes || k == jobs.KindRewriteManifests || k == jobs.KindChangeLayout
}

// refreshJobs reads the state of every job not ended yet, and the new
// files of each in-flight job's settled groups. It returns the jobs that
// ended since the last refresh.
func (m *safetyModel) refreshJobs() (ended []*jobModel) {
	ctx := m.r.e.ctx
	for _, id := range m.jobOrder {
		jm := m.jobs[id]
		if jm.terminal {
			continue
		}
		j, err := m.r.e.deps.Jobs.Get(ctx, id)
		if err != nil {
			m.r.t.Fatalf("read job %s: %v", id, err)
		}
		jm.state, jm.reason, jm.terminal = j.State, j.Reason, j.State.Terminal()
		if jm.terminal {
			ended = append(ended, jm)
			continue
		}
		if !readsPin(jm.kind) {
			continue
		}
		groups, err := m.r.e.deps.Jobs.Groups(ctx, id)
		if err != nil {
			m.r.t.Fatalf("read groups of job %s: %v", id, err)
		}
		for _, g := range groups {
			if g.DescriptorKey == "" || jm.outputs[g.DescriptorKey] != nil {
				continue
			}
			jm.outputs[g.DescriptorKey] = m.descriptorFiles(jm, g.DescriptorKey)
		}
	}
	return ended
}

// descriptorFiles lists the new files a winning descriptor names.
func (m *safetyModel) descriptorFiles(jm *jobModel, key string) []string {
	ctx := m.r.e.ctx
	b, err := m.r.e.deps.Blobs.Get(ctx, key)
	if err != nil {
		m.r.t.Fatalf("read descriptor %s: %v", key, err)
	}
	var d messages.Descriptor
	if err := messages.Decode(b, &d); err != nil {
		m.r.t.Fatalf("decode descriptor %s: %v", key, err)
	}
	st := m.r.tableNamed(jm.table)
	if st == nil {
		return []string{}
	}
	files, err := messages.DecodeDataFiles(m.r.load(st).Metadata(), d.SpecID, d.NewFiles)
	if err != nil {
		m.r.t.Fatalf("decode the new files of descriptor %s: %v", key, err)
	}
	out := []string{}
	for _, f := range files {
		out = append(out, f.FilePath())
	}
	return out
}

// readMeta parses a metadata file (gzip or not); nil when it cannot be
// read (then it is missing, which the needed check reports).
func (m *safetyModel) readMeta(path string) table.Metadata {
	if md, ok := m.metas[path]; ok {
		return md
	}
	data, err := m.r.readFile(path)
	if err != nil || data == nil {
		return nil
	}
	if strings.HasSuffix(path, ".gz.metadata.json") || strings.HasSuffix(path, ".metadata.json.gz") {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil
		}
		if data, err = io.ReadAll(zr); err != nil {
			return nil
		}
	}
	md, err := table.ParseMetadataBytes(data)
	if err != nil {
		m.r.t.Fatalf("parse metadata file %s: %v", path, err)
	}
	m.metas[path] = md
	return md
}

// metadataFiles returns the table's current metadata and every readable
// metadata file of its log.
func (m *safetyModel) metadataFiles(tbl *table.Table) []table.Metadata {
	out := []table.Metadata{tbl.Metadata()}
	for e := range tbl.Metadata().PreviousFiles() {
		if md := m.readMeta(e.MetadataFile); md != nil {
			out = append(out, md)
		}
	}
	return out
}

// snapshotFiles adds, with add, what reading a snapshot needs: its
// manifest list, its manifests and the files of their live entries.
func (m *safetyModel) snapshotFiles(s table.Snapshot, why string, add func(path, why string)) {
	add(s.ManifestList, why+": its manifest list")
	mfs, ok := m.lists[s.ManifestList]
	if !ok {
		var err error
		if mfs, err = s.Manifests(m.ioFor(s.ManifestList)); err != nil {
			return // the list is missing: reported as such
		}
		m.lists[s.ManifestList] = mfs
	}
	for _, mf := range mfs {
		add(mf.FilePath(), why+": a manifest")
		files, ok := m.entries[mf.FilePath()]
		if !ok {
			files = []string{}
			failed := false
			for ent, err := range mf.Entries(m.ioFor(mf.FilePath()), true) {
				if err != nil {
					failed = true
					break
				}
				files = append(files, ent.DataFile().FilePath())
			}
			if failed {
				continue // the manifest is missing: reported as such
			}
			m.entries[mf.FilePath()] = files
		}
		for _, f := range files {
			add(f, why+": a data or delete file")
		}
	}
}

// fsKind is the file system a location is on: "s3" (any spelling of the
// s3 family) or "file".
func fsKind(p string) string {
	if _, _, ok := s3Object(p); ok {
		return "s3"
	}
	return "file"
}

// ioFor is the file IO that reads a location: a table's on its file
// system (one bucket per run: iceberg-go's S3 IO reads every spelling of
// the s3 family in its bucket).
func (m *safetyModel) ioFor(p string) icebergio.IO {
	return m.fs[fsKind(p)]
}

// fingerprintAt returns the rows snapshot id of tbl reads (cached).
func (m *safetyModel) fingerprintAt(tbl *table.Table, st *sTable, id int64) fpResult {
	key := st.name + "#" + strconv.FormatInt(id, 10)
	if f, ok := m.fps[key]; ok {
		return f
	}
	fp, err := fingerprint.Scan(m.r.e.ctx, tbl.Scan(table.WithSnapshotID(id)))
	f := fpResult{fp: fp, err: err}
	if err == nil {
		m.fps[key] = f
	}
	return f
}

// check brings the model up to date after a step of actor and checks it:
// the refs and rows (icekeeper's steps), the snapshots removed, and that
// every needed file is on storage. what names the step for the messages.
func (m *safetyModel) check(actor, what string) {
	ctx := m.r.e.ctx
	cur := make([]*table.Table, len(m.tables))
	for i, tm := range m.tables {
		cur[i] = m.r.load(tm.st)
		if kind := fsKind(cur[i].Location()); m.fs[kind] == nil {
			fs, err := cur[i].FS(ctx)
			if err != nil {
				m.r.t.Fatal(err)
			}
			m.fs[kind] = fs
		}
	}
	for i, tm := range m.tables {
		for _, md := range m.metadataFiles(cur[i]) {
			for _, s := range md.Snapshots() {
				if _, ok := tm.known[s.SnapshotID]; !ok {
					tm.known[s.SnapshotID] = s
				}
			}
		}
		if actor == actorOther {
			m.adopt(tm, cur[i])
		} else {
			m.judge(tm, cur[i], what)
		}
		tm.present = map[int64]bool{}
		for _, s := range cur[i].Metadata().Snapshots() {
			tm.present[s.SnapshotID] = true
		}
	}
	ended := m.refreshJobs()
	m.checkNeeded(actor, what, cur)
	if actor == actorIcekeeper && len(ended) > 0 {
		// A job ended: read every expected ref again in full.
		m.verifyRows(fmt.Sprintf("after job %s ended %s", ended[0].id, ended[0].state), cur)
	}
}

// adopt takes another tool's step as it is: the refs and their rows are
// now what is expected, and the snapshots it removed are retired.
func (m *safetyModel) adopt(tm *tableModel, tbl *table.Table) {
	for id := range tm.present {
		if tbl.Metadata().SnapshotByID(id) == nil {
			tm.retired[id] = "another tool"
		}
	}
	refs := map[string]expRef{}
	for _, name := range sortedRefs(tbl.Metadata()) {
		ref, _ := refOf(tbl.Metadata(), name)
		old, ok := tm.refs[name]
		if ok && old.ref.SnapshotID == ref.SnapshotID && old.fp.err == nil {
			refs[name] = expRef{ref: ref, fp: old.fp}
			continue
		}
		refs[name] = expRef{ref: ref, fp: m.fingerprintAt(tbl, tm.st, ref.SnapshotID)}
	}
	tm.refs = refs
}

// tableRetention is a table's retention properties (Iceberg's defaults:
// keep 1 snapshot, 5 days, refs forever).
func tableRetention(props iceberg.Properties) (minKeep int, maxAgeMs, maxRefAgeMs int64) {
	minKeep, maxAgeMs, maxRefAgeMs = 1, 5*24*3600*1000, -1
	if v, err := strconv.Atoi(props[table.MinSnapshotsToKeepKey]); err == nil {
		minKeep = v
	}
	if v, err := strconv.ParseInt(props[table.MaxSnapshotAgeMsKey], 10, 64); err == nil {
		maxAgeMs = v
	}
	if v, err := strconv.ParseInt(props[table.MaxRefAgeMsKey], 10, 64); err == nil {
		maxRefAgeMs = v
	}
	return minKeep, maxAgeMs, maxRefAgeMs
}

// protected lists the snapshots of the table nothing may remove now, and
// why: the heads of its expected refs (less skip), what each branch's
// retention keeps, the unreferenced ones younger than the table's max
// snapshot age, and the pins of icekeeper jobs in flight.
func (m *safetyModel) protected(tm *tableModel, props iceberg.Properties, skip map[string]bool) map[int64]string {
	nowMs := time.Now().UnixMilli()
	minKeepDefault, maxAgeDefault, _ := tableRetention(props)
	prot := map[int64]string{}
	reached := map[int64]bool{}
	for _, name := range sortedKeys(tm.refs) {
		if skip[name] {
			continue
		}
		ref := tm.refs[name].ref
		if prot[ref.SnapshotID] == "" {
			prot[ref.SnapshotID] = fmt.Sprintf("the head of %s %s", ref.SnapshotRefType, name)
		}
		reached[ref.SnapshotID] = true
		if ref.SnapshotRefType != table.BranchRef {
			continue
		}
		minKeep, maxAge := minKeepDefault, maxAgeDefault
		if ref.MinSnapshotsToKeep != nil {
			minKeep = *ref.MinSnapshotsToKeep
		}
		if ref.MaxSnapshotAgeMs != nil {
			maxAge = *ref.MaxSnapshotAgeMs
		}
		// The walk follows parent ids through the snapshots the metadata
		// had before the step: it stops at the first one gone (as
		// iceberg-go's AncestorsOf and Java's ancestorsOf do), so what
		// lies beyond an expired ancestor is no longer the branch's.
		keeping := true
		id := ref.SnapshotID
		for i := 0; ; i++ {
			s, ok := tm.known[id]
			if !ok || !tm.present[id] {
				break
			}
			reached[id] = true
			if keeping && nowMs-s.TimestampMs > maxAge && i >= minKeep {
				keeping = false
			}
			if keeping && prot[id] == "" {
				prot[id] = fmt.Sprintf("kept by branch %s's retention (its newest %d, or younger than %d ms)", name, minKeep, maxAge)
			}
			if s.ParentSnapshotID == nil {
				break
			}
			id = *s.ParentSnapshotID
		}
	}
	for name, id := range tm.lost {
		if prot[id] == "" {
			prot[id] = "the head of ref " + name + ", which icekeeper dropped"
		}
	}
	for id := range tm.present {
		if s := tm.known[id]; !reached[id] && nowMs-s.TimestampMs <= maxAgeDefault && prot[id] == "" {
			prot[id] = fmt.Sprintf("younger than the table's max snapshot age (%d ms)", maxAgeDefault)
		}
	}
	for _, id := range m.jobOrder {
		jm := m.jobs[id]
		if !jm.terminal && jm.table == tm.st.name && readsPin(jm.kind) && jm.snapshot != 0 && prot[jm.snapshot] == "" {
			prot[jm.snapshot] = fmt.Sprintf("pinned by %s job %s in flight", jm.kind, jm.id)
		}
	}
	return prot
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// judge checks what an icekeeper step did to the table: refs dropped or
// moved, rows changed at main, snapshots removed; then takes what was
// allowed as expected.
func (m *safetyModel) judge(tm *tableModel, tbl *table.Table, what string) {
	meta := tbl.Metadata()
	props := meta.Properties()
	_, _, tableMaxRefAge := tableRetention(props)
	plannedExpire, plannedDrop := map[int64]bool{}, map[string]bool{}
	for _, id := range m.jobOrder {
		if jm := m.jobs[id]; jm.table == tm.st.name && jm.kind == jobs.KindExpire {
			for s := range jm.expire {
				plannedExpire[s] = true
			}
			for name := range jm.removeRefs {
				plannedDrop[name] = true
			}
		}
	}
	nowMs := time.Now().UnixMilli()
	dropped := map[string]bool{}
	for _, name := range sortedKeys(tm.refs) {
		exp := tm.refs[name]
		act, ok := refOf(meta, name)
		if !ok {
			maxRefAge := tableMaxRefAge
			if exp.ref.MaxRefAgeMs != nil {
				maxRefAge = *exp.ref.MaxRefAgeMs
			}
			s, known := tm.known[exp.ref.SnapshotID]
			if name != table.MainBranch && plannedDrop[name] && known && maxRefAge >= 0 && nowMs-s.TimestampMs > maxRefAge {
				dropped[name] = true
				continue
			}
			why := "no icekeeper expiry planned to drop it"
			if plannedDrop[name] {
				why = "an expiry planned to drop it, but it is not older than its max-ref-age"
			}
			m.r.fail(catSafeRefs, "%s: %s %s of %s (snapshot %d) disappeared (%s)", what, exp.ref.SnapshotRefType, name, tm.st.name, exp.ref.SnapshotID, why)
			tm.lost[name] = exp.ref.SnapshotID
			continue
		}
		if act.SnapshotID == exp.ref.SnapshotID {
			continue
		}
		if name != table.MainBranch {
			m.r.fail(catSafeRefs, "%s: icekeeper moved %s %s of %s from snapshot %d to %d", what, exp.ref.SnapshotRefType, name, tm.st.name, exp.ref.SnapshotID, act.SnapshotID)
			continue
		}
		got := m.fingerprintAt(tbl, tm.st, act.SnapshotID)
		switch {
		case exp.fp.err != nil:
			// The rows were unreadable before (another tool's doing).
		case got.err != nil:
			m.r.fail(catRowsAtRef, "%s: main of %s moved from snapshot %d to %d, which cannot be read: %v", what, tm.st.name, exp.ref.SnapshotID, act.SnapshotID, got.err)
		case got.fp != exp.fp.fp:
			m.r.fail(catRowsAtRef, "%s: main of %s moved from snapshot %d to %d, which reads %s, not %s", what, tm.st.name, exp.ref.SnapshotID, act.SnapshotID, got.fp, exp.fp.fp)
		}
	}
	for _, name := range sortedRefs(meta) {
		if _, ok := tm.refs[name]; !ok {
			m.r.fail(catSafeRefs, "%s: icekeeper created ref %s of %s", what, name, tm.st.name)
		}
	}
	prot := m.protected(tm, props, dropped)
	var removed []int64
	for id := range tm.present {
		if meta.SnapshotByID(id) == nil {
			removed = append(removed, id)
		}
	}
	slices.Sort(removed)
	for _, id := range removed {
		switch {
		case plannedExpire[id] && prot[id] == "":
			tm.retired[id] = "icekeeper's expiry"
		case !plannedExpire[id]:
			m.r.fail(catSafeSnapshots, "%s: snapshot %d of %s removed, though no icekeeper expiry planned it (%s)", what, id, tm.st.name, or(prot[id], "unprotected"))
			tm.wronged[id] = true
		default:
			m.r.fail(catSafeSnapshots, "%s: snapshot %d of %s removed by icekeeper's expiry while %s", what, id, tm.st.name, prot[id])
			tm.wronged[id] = true
		}
	}
	// What was allowed (and what was not, already reported) is now
	// expected, less the refs lost, which stay needed through tm.lost.
	refs := map[string]expRef{}
	for _, name := range sortedRefs(meta) {
		ref, _ := refOf(meta, name)
		if old, ok := tm.refs[name]; ok && old.ref.SnapshotID == ref.SnapshotID {
			refs[name] = expRef{ref: ref, fp: old.fp}
			continue
		}
		if old, ok := tm.refs[name]; ok && name == table.MainBranch {
			refs[name] = expRef{ref: ref, fp: old.fp} // the same rows (checked above)
			continue
		}
		refs[name] = expRef{ref: ref, fp: m.fingerprintAt(tbl, tm.st, ref.SnapshotID)}
	}
	tm.refs = refs
}

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// checkNeeded checks that every needed file is on storage (see the file
// comment); a file missing after another tool's step is excused.
func (m *safetyModel) checkNeeded(actor, what string, cur []*table.Table) {
	// needed is keyed by the file a location names (fileID: s3a://b/k and
	// s3://b/k are one object); spelled is how it was first named.
	needed, spelled := map[string]string{}, map[string]string{}
	add := func(p, why string) {
		if id := fileID(p); p != "" && needed[id] == "" {
			needed[id], spelled[id] = why, p
		}
	}
	for i, tm := range m.tables {
		tbl := cur[i]
		name := tm.st.name
		add(tbl.MetadataLocation(), "the current metadata file of "+name)
		for e := range tbl.Metadata().PreviousFiles() {
			add(e.MetadataFile, "a metadata file in "+name+"'s metadata log")
		}
		mds := m.metadataFiles(tbl)
		need := map[int64]string{}
		for _, s := range tbl.Metadata().Snapshots() {
			need[s.SnapshotID] = fmt.Sprintf("snapshot %d of %s", s.SnapshotID, name)
		}
		for _, md := range mds[1:] {
			for _, s := range md.Snapshots() {
				if need[s.SnapshotID] == "" && tm.retired[s.SnapshotID] == "" {
					need[s.SnapshotID] = fmt.Sprintf("snapshot %d of a metadata file in %s's log, which no decided expiry removed", s.SnapshotID, name)
				}
			}
		}
		for _, rn := range sortedKeys(tm.refs) {
			if id := tm.refs[rn].ref.SnapshotID; need[id] == "" {
				need[id] = fmt.Sprintf("snapshot %d of %s, the head of %s", id, name, rn)
			}
		}
		for rn, id := range tm.lost {
			if need[id] == "" {
				need[id] = fmt.Sprintf("snapshot %d of %s, the head of ref %s, which icekeeper dropped", id, name, rn)
			}
		}
		for _, id := range m.jobOrder {
			jm := m.jobs[id]
			if jm.terminal || jm.table != name || !readsPin(jm.kind) {
				continue
			}
			add(jm.metaLoc, fmt.Sprintf("the metadata file %s job %s in flight pinned", jm.kind, jm.id))
			if jm.snapshot != 0 && need[jm.snapshot] == "" {
				need[jm.snapshot] = fmt.Sprintf("snapshot %d of %s, pinned by %s job %s in flight", jm.snapshot, name, jm.kind, jm.id)
			}
			for _, key := range sortedKeys(jm.outputs) {
				for _, p := range jm.outputs[key] {
					add(p, fmt.Sprintf("a new file of %s job %s in flight, not committed yet", jm.kind, jm.id))
				}
			}
		}
		ids := make([]int64, 0, len(need))
		for id := range need {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			if s, ok := tm.known[id]; ok {
				m.snapshotFiles(s, need[id], add)
			}
		}
		for _, md := range mds {
			for sf := range md.Statistics() {
				if need[sf.SnapshotID] != "" {
					add(sf.StatisticsPath, need[sf.SnapshotID]+": its statistics file")
				}
			}
			for sf := range md.PartitionStatistics() {
				if need[sf.SnapshotID] != "" {
					add(sf.StatisticsPath, need[sf.SnapshotID]+": its partition statistics file")
				}
			}
		}
	}
	for p, why := range m.keep {
		add(p, why)
	}
	var onS3 map[string]bool // the run's bucket's objects, listed once
	for _, id := range sortedKeys(needed) {
		if m.excused[id] != "" || m.reported[id] {
			continue
		}
		if _, _, ok := s3Object(id); ok {
			if onS3 == nil {
				onS3 = m.r.s3Keys()
			}
			if onS3[id] {
				continue
			}
		} else if _, err := statLocal(id); err == nil || !errors.Is(err, iofs.ErrNotExist) {
			continue
		}
		p := spelled[id]
		if actor == actorOther {
			m.excused[id] = what
			m.r.note("    (%s deleted %s, needed as %s: not icekeeper's doing)", what, p, needed[id])
			continue
		}
		m.reported[id] = true
		m.r.fail(catNeeded, "%s: %s is gone, needed as %s", what, p, needed[id])
	}
}

// localPath is the local path of a file: URI.
func localPath(p string) string { return strings.TrimPrefix(p, "file://") }

// verifyRows reads every expected ref of every table in full (no cache)
// and compares its rows with what is expected.
func (m *safetyModel) verifyRows(what string, cur []*table.Table) {
	ctx := m.r.e.ctx
	for i, tm := range m.tables {
		for _, name := range sortedKeys(tm.refs) {
			exp := tm.refs[name]
			if exp.fp.err != nil {
				continue
			}
			if _, ok := refOf(cur[i].Metadata(), name); !ok {
				continue // reported by judge
			}
			fp, err := fingerprint.Scan(ctx, cur[i].Scan(table.WithSnapshotID(exp.ref.SnapshotID)))
			switch {
			case err != nil:
				m.r.fail(catRowsAtRef, "%s: %s %s of %s (snapshot %d) cannot be read: %v", what, exp.ref.SnapshotRefType, name, tm.st.name, exp.ref.SnapshotID, err)
			case fp != exp.fp.fp:
				m.r.fail(catRowsAtRef, "%s: %s %s of %s (snapshot %d) reads %s, want %s", what, exp.ref.SnapshotRefType, name, tm.st.name, exp.ref.SnapshotID, fp, exp.fp.fp)
			}
		}
	}
}

// inFlight lists the jobs not ended, as last read.
func (m *safetyModel) inFlight() []*jobModel {
	var out []*jobModel
	for _, id := range m.jobOrder {
		if jm := m.jobs[id]; !jm.terminal {
			out = append(out, jm)
		}
	}
	return out
}

// leaseOwner reads who holds a table's lease (after a planner crashed,
// the job it may have recorded).
func (m *safetyModel) leaseOwner(ctx context.Context, st *sTable) string {
	l, _, err := m.r.e.deps.Leases.Get(ctx, st.name)
	if err != nil {
		m.r.t.Fatalf("read the lease of %s: %v", st.name, err)
	}
	return l.Owner
}
