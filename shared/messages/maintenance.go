package messages

import (
	"fmt"
	"time"
)

// The formats of the maintenance jobs other than compaction: snapshot
// expiry (package expire decides, the committer acts) and manifest
// rewrite. See docs/FORMATS.md.

// ExpiryPlan is an expiry job's plan object: what the planner selected at
// its pin, and the snapshots jobs in flight pinned, which the committer
// keeps whatever the retention when it selects again on the table it
// commits to.
type ExpiryPlan struct {
	Version int    `json:"v"`
	JobID   string `json:"job_id"`
	Table   string `json:"table"`
	Pin     Pin    `json:"pin"`
	// Pinned are snapshots of jobs in flight.
	Pinned []ID `json:"pinned_snapshot_ids"`
	// Expire and RemoveRefs are what the planner selected.
	Expire     []ID     `json:"expire_snapshot_ids"`
	RemoveRefs []string `json:"remove_refs,omitempty"`
	// Leftovers are earlier expiry and orphan cleanup jobs of the table
	// whose commit landed but whose deletions did not finish
	// (jobs.Job.DeletionsLeft): this job's committer finishes them first.
	Leftovers []string `json:"leftover_jobs,omitempty"`
}

// Deletions is an expiry's durable record of the files it frees, written
// before its catalog commit. Once the commit landed (none of Expired is in
// the table any more), the files of Parts that no snapshot outside Kept
// references are deleted, part by part; each part's object is removed once
// its files are. A committer that crashed anywhere is followed by one that
// finds this record and finishes it.
type Deletions struct {
	Version int    `json:"v"`
	JobID   string `json:"job_id"`
	Table   string `json:"table"`
	// Expired are the snapshots the commit removes; Kept those it keeps.
	Expired    []ID     `json:"expired_snapshot_ids"`
	RemoveRefs []string `json:"remove_refs,omitempty"`
	Kept       []ID     `json:"kept_snapshot_ids"`
	Files      int      `json:"files"`
	Bytes      int64    `json:"bytes"`
	// Parts are the keys (in icekeeper's bucket) of the DeletionPart
	// objects, at most DeletionPartFiles files each.
	Parts []string `json:"parts"`
	// Verified: the expiry's commit was checked against the metadata the
	// catalog applied it to (AppliedTo), and the parts hold only files
	// nothing that metadata kept needs. No file of an expiry's record is
	// deleted before it is verified.
	Verified  bool   `json:"verified,omitempty"`
	AppliedTo string `json:"applied_to,omitempty"`
	// DroppedRefs are refs the catalog dropped although the expiry did not
	// remove them (created on an expired snapshot by another writer during
	// the expiry, on a catalog that could not refuse the commit); every
	// file their snapshots need was taken out of the parts.
	DroppedRefs []DroppedRef `json:"dropped_refs,omitempty"`
}

// DroppedRef is a ref an expiry's commit lost: its name and the snapshot
// it pointed at (in AppliedTo's metadata, from which it can be restored).
type DroppedRef struct {
	Name       string `json:"name"`
	SnapshotID ID     `json:"snapshot_id"`
}

// DeletionPartFiles is the most files one DeletionPart lists.
const DeletionPartFiles = 10_000

// DeletionPart lists some of a Deletions' files.
type DeletionPart struct {
	Version int       `json:"v"`
	JobID   string    `json:"job_id"`
	Index   int       `json:"index"`
	Files   []FileRef `json:"files"`
}

// FileRef is one file of a table.
type FileRef struct {
	Path string `json:"path"`
	// Kind is manifest-list, manifest, data, delete or statistics.
	Kind  string `json:"kind"`
	Bytes int64  `json:"bytes"`
}

// IDs converts snapshot ids.
func IDs(ids []int64) []ID {
	out := make([]ID, len(ids))
	for i, id := range ids {
		out[i] = ID(id)
	}
	return out
}

// Int64s converts snapshot ids back.
func Int64s(ids []ID) []int64 {
	out := make([]int64, len(ids))
	for i, id := range ids {
		out[i] = int64(id)
	}
	return out
}

// ManifestRewritePlan is a manifest rewrite job's plan object: the table
// when planned and how many data manifests it had.
type ManifestRewritePlan struct {
	Version int    `json:"v"`
	JobID   string `json:"job_id"`
	Table   string `json:"table"`
	Pin     Pin    `json:"pin"`
	// DataManifests is the current snapshot's data manifests; MaxManifests
	// the count above which a rewrite is due.
	DataManifests int `json:"data_manifests"`
	MaxManifests  int `json:"max_manifests"`
}

// OrphanPlan is an orphan cleanup job's plan object: the table when
// planned, the safety age, and what the listing found (the files are in
// the job's Deletions record). Files outside the location's data/ and
// metadata/ folders are reported, never deleted.
type OrphanPlan struct {
	Version int    `json:"v"`
	JobID   string `json:"job_id"`
	Table   string `json:"table"`
	Pin     Pin    `json:"pin"`
	// OlderThanMillis: only files older than this are orphans.
	OlderThanMillis int64 `json:"older_than_ms"`
	Files           int   `json:"files"`
	Bytes           int64 `json:"bytes"`
	// Elsewhere are orphans outside data/ and metadata/, left alone.
	Elsewhere []string `json:"elsewhere,omitempty"`
	// InFlightAttempts are attempts of jobs that had not ended: their
	// files are never deleted.
	InFlightAttempts []string `json:"in_flight_attempts,omitempty"`
	// ListFanOut: the table is too large to list in one function; the
	// committer fans the listing out, one ListTask per prefix of the
	// location. Files and Bytes are then unknown (zero) at planning.
	ListFanOut bool `json:"list_fan_out,omitempty"`
}

// Listing is an orphan cleanup's record of its fanned-out listing, written
// once its markers are: one marker object per prefix not listed yet (the
// prefix's ListTask, removed by whoever listed it) and, per prefix listed,
// a FoundOrphans object. With no marker left, the committer merges what
// was found.
type Listing struct {
	Version int    `json:"v"`
	JobID   string `json:"job_id"`
	Table   string `json:"table"`
	// MetadataLocation is the table's metadata the prefixes were listed
	// against.
	MetadataLocation string `json:"metadata_location"`
	// Markers are the keys of the prefixes' markers; what each prefix
	// found is under the job's found/ folder.
	Markers []string `json:"markers"`
}

// ListTask asks a rewriter to list one prefix of a table's location for
// orphans (orphans.Find) against MetadataLocation (or, once that file is
// gone, the table as its catalog has it now), keeping files
// modified before OlderThanUnixMillis, write them at FoundName (a name
// relative to icekeeper's bucket prefix) and remove MarkerKey (a full
// key). The marker object holds the Task carrying it.
type ListTask struct {
	MarkerKey           string `json:"marker_key"`
	FoundName           string `json:"found_name"`
	MetadataLocation    string `json:"metadata_location"`
	Prefix              string `json:"prefix"`
	Shallow             bool   `json:"shallow,omitempty"`
	OlderThanUnixMillis int64  `json:"older_than_unix_ms"`
}

// FoundOrphans is what listing one prefix found.
type FoundOrphans struct {
	Version int       `json:"v"`
	JobID   string    `json:"job_id"`
	Prefix  string    `json:"prefix"`
	Files   []FileRef `json:"files"`
	// Metadata are the files under the prefix that nothing references and
	// that look like table metadata, of any age (orphans.Found.Metadata):
	// the committer refuses the cleanup unless each is the table's own.
	Metadata []string `json:"metadata,omitempty"`
	// Refused: listing the prefix refused the cleanup (orphans.ErrRefused:
	// a listed file and a reference differ only in scheme or authority, a
	// logged metadata file cannot be read), why; Files is then empty, and
	// the committer ends the job failed with this reason.
	Refused string `json:"refused,omitempty"`
}

// SplitDeletions makes a Deletions record and its parts (at most
// partFiles files each; DeletionPartFiles when not positive) for files;
// partKey names part i.
func SplitDeletions(jobID, table string, files []FileRef, partFiles int, partKey func(i int) string) (Deletions, []DeletionPart) {
	if partFiles <= 0 {
		partFiles = DeletionPartFiles
	}
	rec := Deletions{Version: FormatVersion, JobID: jobID, Table: table, Files: len(files)}
	var parts []DeletionPart
	for i := 0; i*partFiles < len(files); i++ {
		chunk := files[i*partFiles : min(len(files), (i+1)*partFiles)]
		parts = append(parts, DeletionPart{Version: FormatVersion, JobID: jobID, Index: i, Files: chunk})
		for _, f := range chunk {
			rec.Bytes += f.Bytes
		}
		rec.Parts = append(rec.Parts, partKey(i))
	}
	return rec, parts
}

// DeleteTask asks a rewriter to delete one part of a job's Deletions
// record, checking each file against MetadataLocation first: for an expiry
// (Kept set) no snapshot but Kept may reference it, for an orphan cleanup
// (Orphans) no metadata may.
type DeleteTask struct {
	PartKey string `json:"part_key"`
	// MetadataLocation is the table's metadata once the expiry was
	// committed, or when the orphans were listed. An orphan cleanup's
	// task ignores it: it checks its files against the table its catalog
	// has right before deleting.
	MetadataLocation string `json:"metadata_location"`
	Kept             []ID   `json:"kept_snapshot_ids,omitempty"`
	// Expired are the snapshots the expiry removed: the metadata files of
	// the table's log still have them, and they are not read for what the
	// table needs.
	Expired []ID `json:"expired_snapshot_ids,omitempty"`
	Orphans bool `json:"orphans,omitempty"`
}

// LayoutPlan is a layout change job's plan: the table's sort order (or
// z-order columns) becomes Layout on Columns, if the table's default sort
// order is still FromOrderID when the committer commits (an owner's change
// meanwhile wins).
type LayoutPlan struct {
	Version int    `json:"v"`
	JobID   string `json:"job_id"`
	Table   string `json:"table"`
	Pin     Pin    `json:"pin"`
	// Layout is "sort" or "z-order".
	Layout      string   `json:"layout"`
	Columns     []string `json:"columns"`
	FromOrderID int      `json:"from_order_id"`
	Why         string   `json:"why"`
	// At is when the change was planned: the trial it starts
	// (layouttrial.PropertyTrial) is dated by it.
	At time.Time `json:"at,omitempty"`
	// Verdict, when set, makes the job settle the table's layout trial
	// instead of changing the layout: "keep" ends the trial (the rollout
	// continues), "revert" restores the layout the trial's change
	// replaced and records the rejection. Trial is the trial property's
	// value at planning: the commit stands down if it changed.
	Verdict string `json:"verdict,omitempty"`
	Trial   string `json:"trial,omitempty"`
}

// RefusedPart records that a deletion task of an orphan cleanup refused
// its part (package deletions): the part's files were kept, and the
// committer ends the job failed with Reason.
type RefusedPart struct {
	Version int    `json:"v"`
	JobID   string `json:"job_id"`
	Part    int    `json:"part"`
	Reason  string `json:"reason"`
}

// RefusedPrefix is where a job's refused parts are recorded (under
// icekeeper's bucket prefix).
func RefusedPrefix(jobID string) string { return "jobs/" + jobID + "/refused/" }

// RefusedName names the record of part index of a job (RefusedPart).
func RefusedName(jobID string, index int) string {
	return fmt.Sprintf("%s%05d.json", RefusedPrefix(jobID), index)
}
