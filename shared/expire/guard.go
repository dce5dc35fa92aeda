package expire

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// Why a guard: iceberg-go's sql, glue and hive catalogs apply a commit's
// updates to the metadata they load inside CommitTable, not to the
// metadata the updates were made on, and RemoveSnapshots then drops every
// ref whose snapshot it removes (table/metadata.go, MetadataBuilder
// .RemoveSnapshots: "newRefs ... validSnapshotIDs"). A tag or branch that
// another writer created on a snapshot after the expiry selected it would
// be dropped silently, and its files deleted. Iceberg Java's builder does
// the same (TableMetadata.Builder.removeSnapshots removes "dangling"
// refs); Java's own RemoveSnapshots is safe only because its table
// operations commit against the exact base metadata. No standard
// requirement can say "no ref points at these snapshots", so the guard
// says it: it is validated against the metadata the catalog is about to
// change, inside the catalog's conditional write.
//
// A REST catalog validates requirements on its server, which knows only
// the spec's requirement types: there the guard travels as the harmless
// assert-table-uuid it also implies, every ref is asserted where the
// selection saw it, and what the server did is checked after the commit
// (Dropped, PreCommit) before anything is deleted.

// refsGuard is the requirement that no ref of the metadata being changed
// points at a snapshot the expiry removes, that no branch other than main
// that is new or moved since the selection has one in its ancestry (its
// own retention was not part of the selection), and that every ref the
// expiry removes is still where the selection saw it. Otherwise refs may
// move, appear and disappear: main's head moving on, as it does on a busy
// table every few seconds, conflicts with nothing the expiry decided (the
// files the new snapshots use are kept after the commit: StillUnreferenced).
type refsGuard struct {
	uuid    uuid.UUID
	expired map[int64]bool
	removed map[string]int64
	seen    map[string]int64
}

// GetType is the spec's requirement type the guard implies; see MarshalJSON.
func (g refsGuard) GetType() string { return "assert-table-uuid" }

// MarshalJSON sends the guard to a REST server as assert-table-uuid: a
// server cannot run the guard, and the table's uuid is what it implies
// there (the rest is asserted ref by ref, and checked after the commit).
func (g refsGuard) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Type string    `json:"type"`
		UUID uuid.UUID `json:"uuid"`
	}{"assert-table-uuid", g.uuid})
}

// Validate fails, as a commit conflict (table.ErrCommitFailed, so the
// committer reloads and selects again), when meta is another table, a ref
// of meta points at a snapshot the expiry removes, or a ref the expiry
// removes moved or is gone.
func (g refsGuard) Validate(meta table.Metadata) error {
	if meta == nil {
		return fmt.Errorf("%w: requirement failed: the table's metadata does not exist", table.ErrCommitFailed)
	}
	if meta.TableUUID() != g.uuid {
		return fmt.Errorf("%w: requirement failed: table uuid %s, expected %s", table.ErrCommitFailed, meta.TableUUID(), g.uuid)
	}
	var hit []string
	for name, ref := range meta.Refs() {
		if g.expired[ref.SnapshotID] {
			hit = append(hit, fmt.Sprintf("%s -> %d", name, ref.SnapshotID))
			continue
		}
		if was, ok := g.seen[name]; name == table.MainBranch || ref.SnapshotRefType != table.BranchRef || ok && was == ref.SnapshotID {
			continue
		}
		for _, s := range table.AncestorsOf(ref.SnapshotID, meta.SnapshotByID) {
			if g.expired[s.SnapshotID] {
				hit = append(hit, fmt.Sprintf("branch %s (new or moved) descends from %d", name, s.SnapshotID))
				break
			}
		}
	}
	refs := maps(meta)
	for name, id := range g.removed {
		if got, ok := refs[name]; !ok || got != id {
			hit = append(hit, fmt.Sprintf("%s moved or removed (was %d)", name, id))
		}
	}
	if len(hit) > 0 {
		sort.Strings(hit)
		return fmt.Errorf("%w: requirement failed: refs changed since the expiry selected: %s", table.ErrCommitFailed, strings.Join(hit, ", "))
	}
	return nil
}

func maps(meta table.Metadata) map[string]int64 {
	out := map[string]int64{}
	for name, ref := range meta.Refs() {
		out[name] = ref.SnapshotID
	}
	return out
}

// Updates are the metadata changes that apply a selection made on base,
// and the requirements that keep the commit from dropping or expiring what
// the selection did not decide to: the guard (see refsGuard) and, for a
// catalog that validates requirements on a server (serverSide: REST), the
// spec's assert-ref-snapshot-id for every ref of base, which is all such a
// server can check (a ref created meanwhile is then found after the
// commit: Dropped).
func Updates(base table.Metadata, sel Selection, serverSide bool) ([]table.Requirement, []table.Update) {
	refs := maps(base)
	g := refsGuard{uuid: base.TableUUID(), expired: map[int64]bool{}, removed: map[string]int64{}, seen: refs}
	for _, id := range sel.ExpiredIDs() {
		g.expired[id] = true
	}
	for _, name := range sel.RemovedRefs {
		g.removed[name] = refs[name]
	}
	reqs := []table.Requirement{g}
	names := make([]string, 0, len(refs))
	for name := range refs {
		if serverSide || slices.Contains(sel.RemovedRefs, name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		id := refs[name]
		reqs = append(reqs, table.AssertRefSnapshotID(name, &id))
	}
	var updates []table.Update
	for _, name := range sel.RemovedRefs {
		updates = append(updates, table.NewRemoveSnapshotRefUpdate(name))
	}
	if ids := sel.ExpiredIDs(); len(ids) > 0 {
		// postCommit false: the files are deleted by the caller, after a
		// durable record of them.
		updates = append(updates, table.NewRemoveSnapshotsUpdate(ids, false))
	}
	return reqs, updates
}
