package health

// Active-write scoping: a partition a writer committed to within the
// table's idle time (icekeeper.compaction.hot-partition.idle-time) is hot.
// Compacting it is safe (the committer rebases concurrent deletes) but
// wasteful: new small files keep arriving and each job meets the writer's
// commits. So compaction leaves a hot partition alone unless it has piled
// up icekeeper.compaction.hot-partition.min-files candidate files, and the
// health report lists every hot partition with what was decided and why.
//
// With icekeeper.compaction.hot-partition.min-file-age set, compaction
// takes only the old files of a hot partition (ScopeYoung, before the
// compaction plan): a data file added within that age, which a writer
// may still be racing for, is not a candidate there, and the partition's
// older files are planned by the compaction planner's own rules, as if
// the young ones were not there (its min-input-files counts old files
// only, and so does min-files above). The report counts the young files
// left, per hot partition.
//
// Invariants: only hot partitions lose candidates (a cold partition's
// young files are compacted as before); a young file is never a
// candidate of a hot partition; what a hot partition gives up is always
// described (ScopeHot, NoteYoung).

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/icekeeper/icekeeper/shared/messages"
)

// HotPartition is a partition a writer committed to recently.
type HotPartition struct {
	Partition string `json:"partition"`
	SpecID    int    `json:"spec_id"`
	// LastWriteAt is when the last snapshot that added or removed one of
	// its files was committed.
	LastWriteAt time.Time `json:"last_write_at"`
	// CandidateFiles are the files compaction would rewrite there.
	CandidateFiles int `json:"candidate_files"`
	// Skipped: compaction leaves it alone this time; Why says why, or why
	// it is compacted anyway.
	Skipped bool   `json:"skipped"`
	Why     string `json:"why"`
	// YoungFiles are its data files added within the table's min file
	// age: not candidates, left for the writer (ScopeYoung).
	YoungFiles int `json:"young_files,omitempty"`

	key string // messages.PartitionKey
}

// YoungFiles are the data files of one hot partition that ScopeYoung took
// out of compaction's candidates.
type YoungFiles struct {
	Files int
	Bytes int64
	// File is one of them, to name the partition by.
	File iceberg.DataFile
}

// ScopeYoung takes out of tasks, in place, the data files of hot
// partitions (written within idle of now, per writes) that young reports
// added within the table's min file age, and returns the rest, in order,
// with what it took per partition (messages.PartitionKey). young is
// filescan.AddedSince over a plan made with Options.AddedSince: now minus
// the age. Only young files have their partition looked up, so a million
// tasks cost a million calls of young.
func ScopeYoung(tasks []table.FileScanTask, writes map[string]time.Time, now time.Time, idle time.Duration, young func(iceberg.DataFile) bool) ([]table.FileScanTask, map[string]YoungFiles) {
	if idle <= 0 || len(writes) == 0 {
		return tasks, nil
	}
	var left map[string]YoungFiles
	kept := slices.DeleteFunc(tasks, func(t table.FileScanTask) bool {
		if !young(t.File) {
			return false
		}
		k := messages.PartitionKey(t.File)
		if at, ok := writes[k]; !ok || now.Sub(at) > idle {
			return false
		}
		if left == nil {
			left = map[string]YoungFiles{}
		}
		y := left[k]
		y.Files++
		y.Bytes += t.File.FileSizeBytes()
		if y.File == nil {
			y.File = t.File
		}
		left[k] = y
		return true
	})
	return kept, left
}

// NoteYoung adds to hot (ScopeHot's descriptions) the young files
// ScopeYoung left per partition, and describes the hot partitions that
// had only young files to give, or old files too few for a group. writes,
// now and idle are ScopeHot's; minAge is the table's min file age.
func NoteYoung(hot []HotPartition, young map[string]YoungFiles, writes map[string]time.Time, now time.Time, idle, minAge time.Duration, name func(iceberg.DataFile) string) []HotPartition {
	if len(young) == 0 {
		return hot
	}
	noted := map[string]bool{}
	for i := range hot {
		y, ok := young[hot[i].key]
		if !ok {
			continue
		}
		noted[hot[i].key] = true
		hot[i].YoungFiles = y.Files
		hot[i].Why += fmt.Sprintf("; its %d files added within the min file age of %s are not candidates: left for the writer", y.Files, minAge)
	}
	for k, y := range young {
		if noted[k] {
			continue
		}
		at := writes[k]
		hot = append(hot, HotPartition{
			Partition: name(y.File), SpecID: int(y.File.SpecID()), LastWriteAt: at, Skipped: true, YoungFiles: y.Files, key: k,
			Why: fmt.Sprintf("written %s ago, within the idle time of %s: its %d files added within the min file age of %s are not candidates, left for the writer, and its older files make no group worth rewriting",
				now.Sub(at).Round(time.Second), idle, y.Files, minAge),
		})
	}
	sort.Slice(hot, func(i, j int) bool { return hot[i].Partition < hot[j].Partition })
	return hot
}

// RecentWrites returns, per partition (messages.PartitionKey), when the
// last snapshot committed at or after now-idle added or removed a data or
// delete file in it. icekeeper's own snapshots (stamped with a job id) are
// not writes. Only the manifests those snapshots wrote are read.
func RecentWrites(ctx context.Context, tbl *table.Table, now time.Time, idle time.Duration) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	if idle <= 0 {
		return out, nil
	}
	since := now.Add(-idle).UnixMilli()
	err := eachEntryAdded(ctx, tbl, func(s table.Snapshot) bool { return s.TimestampMs >= since && !ours(s) }, func(e iceberg.ManifestEntry, at time.Time) {
		if e.Status() != iceberg.EntryStatusADDED && e.Status() != iceberg.EntryStatusDELETED {
			return
		}
		k := messages.PartitionKey(e.DataFile())
		if at.After(out[k]) {
			out[k] = at
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// WriterActivity is what a table's writers committed to its main branch
// within a window.
type WriterActivity struct {
	// Commits are the snapshots icekeeper did not make.
	Commits int
	// Removing are those of them that removed data or delete files
	// (RemovesFiles): the commits that can abort a compaction, whose
	// inputs, or deletes it applied, they may remove. An append never can
	// (the committer keeps it, docs/DESIGN.md section 7.2), nor can a
	// position delete or deletion vector added (it is rebased, section
	// 20).
	Removing int
	// Last is when the newest of them was committed (zero: none).
	Last time.Time
}

// WriterCommits counts the snapshots of the table's main branch (the
// current snapshot and its ancestors) committed within window before now
// that icekeeper did not make. It reads the metadata only: the writers'
// rate that package throttle weighs.
func WriterCommits(meta table.Metadata, now time.Time, window time.Duration) WriterActivity {
	since := now.Add(-window).UnixMilli()
	var w WriterActivity
	s := meta.CurrentSnapshot()
	for steps := len(meta.Snapshots()); s != nil && s.TimestampMs >= since && steps > 0; steps-- {
		if !ours(*s) {
			w.Commits++
			if RemovesFiles(*s) {
				w.Removing++
			}
			if at := time.UnixMilli(s.TimestampMs).UTC(); at.After(w.Last) {
				w.Last = at
			}
		}
		if s.ParentSnapshotID == nil {
			break
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	return w
}

// RemovesFiles reports whether a snapshot removed data or delete files: by
// its summary's deleted-data-files and removed-delete-files, or, when it
// has neither, by its operation (anything but an append may have).
func RemovesFiles(s table.Snapshot) bool {
	if s.Summary == nil {
		return true
	}
	deleted, d := s.Summary.Properties["deleted-data-files"]
	removed, r := s.Summary.Properties["removed-delete-files"]
	if !d && !r {
		return s.Summary.Operation != table.OpAppend
	}
	nonZero := func(v string) bool { return v != "" && strings.TrimSpace(v) != "0" }
	return nonZero(deleted) || nonZero(removed)
}

// PartitionNamer renders data files' partitions for people, as the
// report's partitions read ("region=region-01").
func PartitionNamer(meta table.Metadata) func(iceberg.DataFile) string {
	n := newPartitionNamer(meta)
	return func(df iceberg.DataFile) string { return n.name(df.SpecID(), df.Partition()) }
}

// ours reports whether an icekeeper job made the snapshot.
func ours(s table.Snapshot) bool {
	if s.Summary == nil {
		return false
	}
	return s.Summary.Properties[messages.SummaryJobID] != "" || s.Summary.Properties[messages.SummaryStagedFor] != ""
}

// ScopeHot drops the groups of hot partitions (written within idle of now,
// per writes) that have fewer than minFiles candidate files in all their
// groups, and describes every hot partition that has groups. name renders
// a partition for people.
func ScopeHot(groups []compaction.Group, writes map[string]time.Time, now time.Time, idle time.Duration, minFiles int, name func(iceberg.DataFile) string) ([]compaction.Group, []HotPartition) {
	if idle <= 0 || len(writes) == 0 {
		return groups, nil
	}
	files := map[string]int{}
	for _, g := range groups {
		files[messages.PartitionKey(g.Tasks[0].File)] += len(g.Tasks)
	}
	var kept []compaction.Group
	var hot []HotPartition
	described := map[string]bool{}
	for _, g := range groups {
		k := messages.PartitionKey(g.Tasks[0].File)
		at, ok := writes[k]
		if !ok || now.Sub(at) > idle {
			kept = append(kept, g)
			continue
		}
		skip := files[k] < minFiles
		if !skip {
			kept = append(kept, g)
		}
		if described[k] {
			continue
		}
		described[k] = true
		h := HotPartition{Partition: name(g.Tasks[0].File), SpecID: int(g.Tasks[0].File.SpecID()), LastWriteAt: at, CandidateFiles: files[k], Skipped: skip, key: k}
		ago := now.Sub(at).Round(time.Second)
		if skip {
			h.Why = fmt.Sprintf("written %s ago, within the idle time of %s, and %d candidate files, fewer than %d: left until writes pause", ago, idle, files[k], minFiles)
		} else {
			h.Why = fmt.Sprintf("written %s ago, within the idle time of %s, but %d candidate files, at least %d: compacted anyway", ago, idle, files[k], minFiles)
		}
		hot = append(hot, h)
	}
	sort.Slice(hot, func(i, j int) bool { return hot[i].Partition < hot[j].Partition })
	return kept, hot
}
