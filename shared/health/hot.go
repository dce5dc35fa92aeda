package health

// Active-write scoping: a partition a writer committed to within the
// table's idle time (icekeeper.compaction.hot-partition.idle-time) is hot.
// Compacting it is safe (the committer rebases concurrent deletes) but
// wasteful: new small files keep arriving and each job meets the writer's
// commits. So compaction leaves a hot partition alone unless it has piled
// up icekeeper.compaction.hot-partition.min-files candidate files, and the
// health report lists every hot partition with what was decided and why.

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
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
	var fs icebergio.IO
	for _, s := range tbl.Metadata().Snapshots() {
		if s.TimestampMs < since || ours(s) {
			continue
		}
		if fs == nil {
			var err error
			if fs, err = tbl.FS(ctx); err != nil {
				return nil, fmt.Errorf("health: open table IO: %w", err)
			}
		}
		manifests, err := s.Manifests(fs)
		if err != nil {
			return nil, fmt.Errorf("health: manifests of snapshot %d: %w", s.SnapshotID, err)
		}
		at := time.UnixMilli(s.TimestampMs).UTC()
		for _, m := range manifests {
			if m.SnapshotID() != s.SnapshotID {
				continue // written by an earlier snapshot
			}
			for e, err := range m.Entries(fs, false) {
				if err != nil {
					return nil, fmt.Errorf("health: read manifest %s: %w", m.FilePath(), err)
				}
				if e.SnapshotID() != s.SnapshotID || (e.Status() != iceberg.EntryStatusADDED && e.Status() != iceberg.EntryStatusDELETED) {
					continue
				}
				k := messages.PartitionKey(e.DataFile())
				if at.After(out[k]) {
					out[k] = at
				}
			}
		}
	}
	return out, nil
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
		h := HotPartition{Partition: name(g.Tasks[0].File), SpecID: int(g.Tasks[0].File.SpecID()), LastWriteAt: at, CandidateFiles: files[k], Skipped: skip}
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
