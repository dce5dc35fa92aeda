// Package writehistory gives a table's metadata a history of writers'
// commits on its main branch, for tests of the decisions that read one
// (package pacing's write rate, the dispatcher's pacing).
//
// Only metadata is written: the snapshots have summaries and no manifest
// lists, so they describe a history and cannot be scanned.
package writehistory

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/iceberg-go/table"
)

// Commit is one snapshot of the main branch.
type Commit struct {
	At        time.Time
	Operation table.Operation
	// AddedDataFiles is its summary's added-data-files; negative: the
	// summary has none.
	AddedDataFiles int
}

// Append returns meta with commits (oldest first) appended to its main
// branch, each the parent of the next. Metadata last updated after the
// first commit is dated back to it, since Iceberg refuses a snapshot older
// than its metadata.
func Append(meta table.Metadata, commits []Commit) (table.Metadata, error) {
	if len(commits) == 0 {
		return meta, nil
	}
	if first := commits[0].At.UnixMilli(); meta.LastUpdatedMillis() > first {
		var err error
		if meta, err = datedBack(meta, first); err != nil {
			return nil, err
		}
	}
	b, err := table.MetadataBuilderFromBase(meta, "")
	if err != nil {
		return nil, err
	}
	var parent *int64
	if cur := meta.CurrentSnapshot(); cur != nil {
		parent = &cur.SnapshotID
	}
	seq := meta.LastSequenceNumber()
	for i, c := range commits {
		seq++
		id := seq*1000 + int64(i)
		props := map[string]string{}
		if c.AddedDataFiles >= 0 {
			props["added-data-files"] = strconv.Itoa(c.AddedDataFiles)
		}
		snap := table.Snapshot{
			SnapshotID: id, ParentSnapshotID: parent, SequenceNumber: seq, TimestampMs: c.At.UnixMilli(),
			Summary: &table.Summary{Operation: c.Operation, Properties: props},
		}
		if err := b.AddSnapshot(&snap); err != nil {
			return nil, fmt.Errorf("writehistory: commit %d: %w", i, err)
		}
		if err := b.SetSnapshotRef(table.MainBranch, id, table.BranchRef); err != nil {
			return nil, fmt.Errorf("writehistory: commit %d: %w", i, err)
		}
		parent = &snap.SnapshotID
	}
	return b.Build()
}

// datedBack is meta last updated at ms.
func datedBack(meta table.Metadata, ms int64) (table.Metadata, error) {
	raw, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	doc["last-updated-ms"] = ms
	if raw, err = json.Marshal(doc); err != nil {
		return nil, err
	}
	return table.ParseMetadataBytes(raw)
}
