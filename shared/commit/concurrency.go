package commit

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/deletefiles"
	"github.com/icekeeper/icekeeper/shared/messages"
)

// Scope is what a job rewrites, as ValidateSince needs it.
type Scope struct {
	// Rewritten are the input data files' paths.
	Rewritten map[string]struct{}
	// RewrittenPartitions are the input files' partitions (partitionKey).
	RewrittenPartitions map[string]struct{}
	// MovedPartitions are the partitions, before and after, of rows that
	// the job moves to another partition spec: an equality delete scoped to
	// one of them may apply differently once the rows moved.
	MovedPartitions map[string]struct{}
	// Removing are the delete files the job removes as dead (fileKey).
	Removing map[string]struct{}
	// Applied are the delete files live at S that apply to an input file
	// (fileKey; a compaction's): the rewriters applied them, so the new
	// files lack the rows they delete, whether or not they also apply to
	// files the job leaves alone (and so stay in the table).
	Applied map[string]struct{}
	// Rebase: position deletes and deletion vectors committed since S on
	// rewritten files are left to the rebase (Concurrent), not aborted for.
	Rebase bool
	// EqualityRemoved holds, per partition (partitionKey, or "" for
	// equality deletes of an unpartitioned spec, which apply to every
	// partition), the largest data sequence number of the equality deletes
	// a delete-file rewrite converts and removes.
	EqualityRemoved map[string]int64
}

// ValidateSince examines every snapshot committed on top of the pinned one
// and returns ErrAborted when committing the rewrite could lose a delete or
// a removal, or resurrect or hide a row:
//   - a position delete or deletion vector that may target a rewritten file
//     (its rows would come back in the new files);
//   - the removal of an input file (its rows would come back, or twice);
//   - a partition-scoped equality delete in a partition that rows move out
//     of or into (the job moved them to another spec): the Iceberg spec
//     applies such a delete only to data files of its own spec and
//     partition, so it would stop applying to rows it applied to, or start
//     applying to rows it did not;
//   - the removal of any delete file the rewriters applied (Scope.Applied,
//     Scope.Removing), whether the job removes it as dead or it also
//     applies to files the job leaves alone: whoever removed it meant its
//     rows to be seen again (or replaced it with other deletes, which the
//     rules above examine); the new files, which have it applied, would
//     hide them. A position delete or deletion vector goes to the rebase
//     instead (Concurrent.Removed), which lets it go only when every row it
//     deleted of a rewritten file is deleted again since S. Removing a dead
//     one twice would also fail ("cannot remove delete files that do not
//     belong to the table"), on every retry.
//
// Appends pass, and so do global equality deletes and equality deletes of
// partitions no row moves across: the pinned data sequence number keeps
// them applying to the new files exactly as to the inputs.
func ValidateSince(ctx context.Context, cur *table.Table, pin messages.Pin, scope Scope) (Concurrent, error) {
	var conc Concurrent
	err := validateSince(ctx, cur, pin, scope, &conc, nil)
	return conc, err
}

// Concurrent is what a snapshot committed since S did that the job rebases
// rather than aborts for (Scope.Rebase; see rebase.go).
type Concurrent struct {
	// Added are position delete files and deletion vectors added since S
	// that may target a rewritten file.
	Added []iceberg.DataFile
	// Removed are position delete files and deletion vectors the
	// rewriters applied (the job removes them as dead, or they also apply
	// to files it leaves alone) that a snapshot since S removed (a writer
	// merged a deletion vector, rewrote its position deletes, or undid
	// them).
	Removed []iceberg.DataFile
}

// Empty reports whether there is nothing to rebase.
func (c Concurrent) Empty() bool { return len(c.Added) == 0 && len(c.Removed) == 0 }

// validateSince is ValidateSince; seen, when not nil, keeps each
// snapshot's outcome across a commit's rounds (a snapshot never changes, nor
// does the job's scope), so a round examines only the snapshots new to it.
func validateSince(ctx context.Context, cur *table.Table, pin messages.Pin, scope Scope, conc *Concurrent, seen map[int64]Concurrent) error {
	head := cur.CurrentSnapshot()
	var since []*table.Snapshot
	for s := head; ; {
		if s == nil {
			return fmt.Errorf("%w: %w: pinned snapshot %d is no longer an ancestor of the table's current snapshot", ErrAborted, ErrConcurrent, pin.SnapshotID)
		}
		if s.SnapshotID == pin.SnapshotID {
			break
		}
		since = append(since, s)
		if s.ParentSnapshotID == nil {
			s = nil
			continue
		}
		s = cur.SnapshotByID(*s.ParentSnapshotID)
	}
	if len(since) == 0 {
		return nil
	}
	fs, err := cur.FS(ctx)
	if err != nil {
		return fmt.Errorf("open table IO: %w", err)
	}
	for _, s := range since {
		got, ok := seen[s.SnapshotID]
		if !ok {
			var err error
			if got, err = validateSnapshot(ctx, fs, s, scope); err != nil {
				return err
			}
			if seen != nil {
				seen[s.SnapshotID] = got
			}
		}
		conc.Added = append(conc.Added, got.Added...)
		conc.Removed = append(conc.Removed, got.Removed...)
	}
	return nil
}

// validateSnapshot examines the entries snapshot s wrote (see
// ValidateSince).
func validateSnapshot(ctx context.Context, fs icebergio.IO, s *table.Snapshot, scope Scope) (Concurrent, error) {
	var out Concurrent
	manifests, err := s.Manifests(fs)
	if err != nil {
		return out, fmt.Errorf("read manifests of snapshot %d: %w", s.SnapshotID, err)
	}
	for _, m := range manifests {
		if m.SnapshotID() != s.SnapshotID {
			continue // written by an earlier snapshot
		}
		for e, err := range m.Entries(fs, false) {
			if err != nil {
				return out, fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
			}
			if e.SnapshotID() != s.SnapshotID {
				continue
			}
			df := e.DataFile()
			switch {
			case e.Status() == iceberg.EntryStatusDELETED && df.ContentType() == iceberg.EntryContentData:
				if _, ok := scope.Rewritten[df.FilePath()]; ok {
					return out, fmt.Errorf("%w: %w: snapshot %d removed input file %s", ErrAborted, ErrConcurrent, s.SnapshotID, df.FilePath())
				}
			case e.Status() == iceberg.EntryStatusADDED && df.ContentType() == iceberg.EntryContentData:
				if eq, ok := equalityBelow(scope.EqualityRemoved, partitionKey(df), e.SequenceNum()); ok {
					return out, fmt.Errorf("%w: %w: snapshot %d added data file %s with data sequence number %d, below that of an equality delete the job converts and removes (%d): the delete applies to it, its conversion does not", ErrAborted, ErrConcurrent, s.SnapshotID, df.FilePath(), e.SequenceNum(), eq)
				}
			case e.Status() == iceberg.EntryStatusDELETED:
				_, removing := scope.Removing[fileKey(df)]
				_, applied := scope.Applied[fileKey(df)]
				switch {
				case (removing || applied) && scope.Rebase && df.ContentType() == iceberg.EntryContentPosDeletes:
					// The rebase checks that every row it deleted of a
					// rewritten file is deleted again, or aborts.
					out.Removed = append(out.Removed, df)
				case removing:
					return out, fmt.Errorf("%w: %w: snapshot %d removed delete file %s, which applies to this job's inputs and which the job removes too", ErrAborted, ErrConcurrent, s.SnapshotID, df.FilePath())
				case applied:
					return out, fmt.Errorf("%w: %w: snapshot %d removed delete file %s, which the rewriters applied to this job's inputs: the rows it deleted are live again, and the new files would keep them deleted", ErrAborted, ErrConcurrent, s.SnapshotID, df.FilePath())
				}
			case e.Status() == iceberg.EntryStatusADDED && df.ContentType() == iceberg.EntryContentEqDeletes:
				if _, ok := scope.MovedPartitions[partitionKey(df)]; ok && len(df.Partition()) > 0 {
					return out, fmt.Errorf("%w: %w: snapshot %d added equality delete %s scoped to partition %s, which rows of this job move across (partition spec change)", ErrAborted, ErrConcurrent, s.SnapshotID, df.FilePath(), partitionKey(df))
				}
			case e.Status() == iceberg.EntryStatusADDED && df.ContentType() == iceberg.EntryContentPosDeletes:
				target, ok := mayTarget(df, deletefiles.PathFieldID, scope)
				switch {
				case !ok:
				case scope.Rebase:
					out.Added = append(out.Added, df)
				case target != "":
					return out, fmt.Errorf("%w: %w: snapshot %d added a position delete or deletion vector (%s) that may delete rows of rewritten file %s", ErrAborted, ErrConcurrent, s.SnapshotID, df.FilePath(), target)
				default:
					return out, fmt.Errorf("%w: %w: snapshot %d added partition-scoped position delete %s in a rewritten partition", ErrAborted, ErrConcurrent, s.SnapshotID, df.FilePath())
				}
			}
		}
	}
	return out, nil
}

// CheckStillValid decides whether the files the job wrote are still valid
// data files of the table as it is now (cur), with a reason when not
// (ErrAborted). They were written with the pinned metadata's current schema
// and the groups' output specs. Iceberg reads data files by field id, so
// files written at an older schema stay valid under every change Iceberg
// allows: a column added since reads as null or its initial default, a
// dropped one is ignored, a renamed or moved one is found by its id, a
// promoted one is widened on read. What cannot be right is a field id whose
// type changed other than by a promotion, a required column the files lack
// and that has no initial default, or a spec that is no longer in the
// table's metadata.
func CheckStillValid(cur, pinned *table.Table, newFiles []iceberg.DataFile) error {
	if written, now := pinned.Schema(), cur.Schema(); written.ID != now.ID {
		if err := checkSchemaStillValid(written, now); err != nil {
			return err
		}
	}
	specs := map[int]bool{}
	for _, f := range newFiles {
		specs[int(f.SpecID())] = true
	}
	for id := range specs {
		if cur.Metadata().PartitionSpecByID(id) == nil {
			return fmt.Errorf("%w: partition spec %d of the new files was removed from the table since planning", ErrAborted, id)
		}
	}
	return nil
}

// checkSchemaStillValid checks files written at schema written against
// schema now (see CheckStillValid).
func checkSchemaStillValid(written, now *iceberg.Schema) error {
	for _, f := range written.Fields() {
		if err := stillValidField(f, now); err != nil {
			return fmt.Errorf("%w: the schema changed since planning (schema %d, now %d) and the new files no longer fit it: %v", ErrAborted, written.ID, now.ID, err)
		}
	}
	for _, f := range now.Fields() {
		if _, ok := written.FindFieldByID(f.ID); !ok && f.Required && f.InitialDefault == nil {
			return fmt.Errorf("%w: the schema changed since planning (schema %d, now %d): required column %q (id %d) is missing from the new files and has no initial default", ErrAborted, written.ID, now.ID, f.Name, f.ID)
		}
	}
	return nil
}

// stillValidField checks one written field, and its nested fields, against
// the current schema.
func stillValidField(f iceberg.NestedField, now *iceberg.Schema) error {
	cur, ok := now.FindFieldByID(f.ID)
	if !ok {
		return nil // dropped since: ignored on read
	}
	wp, wPrim := f.Type.(iceberg.PrimitiveType)
	cp, cPrim := cur.Type.(iceberg.PrimitiveType)
	switch {
	case wPrim && cPrim:
		if !promotes(wp, cp) {
			return fmt.Errorf("column %q (id %d) is %s in the new files and %s now", cur.Name, f.ID, f.Type, cur.Type)
		}
		return nil
	case wPrim != cPrim, nestedKind(f.Type) != nestedKind(cur.Type):
		// A struct, list or map reads only as the same kind: Iceberg
		// promotes primitives alone (spec, "Schema Evolution").
		return fmt.Errorf("column %q (id %d) is %s in the new files and %s now", cur.Name, f.ID, f.Type, cur.Type)
	}
	if nested, ok := f.Type.(iceberg.NestedType); ok {
		for _, child := range nested.Fields() {
			if err := stillValidField(child, now); err != nil {
				return err
			}
		}
	}
	return nil
}

// nestedKind names the kind of a nested type ("struct", "list", "map"),
// "" for a primitive.
func nestedKind(t iceberg.Type) string {
	switch t.(type) {
	case *iceberg.StructType:
		return "struct"
	case *iceberg.ListType:
		return "list"
	case *iceberg.MapType:
		return "map"
	}
	return ""
}

// promotes reports whether a column written as from reads as to: equal
// types or an Iceberg type promotion (spec, "Schema Evolution": int to
// long, float to double, decimal(P,S) to decimal(P',S) with P' >= P, and in
// v3 date to timestamp or timestamp_ns).
func promotes(from, to iceberg.PrimitiveType) bool {
	if from.Equals(to) {
		return true
	}
	switch f := from.(type) {
	case iceberg.Int32Type:
		_, ok := to.(iceberg.Int64Type)
		return ok
	case iceberg.Float32Type:
		_, ok := to.(iceberg.Float64Type)
		return ok
	case iceberg.DecimalType:
		t, ok := to.(iceberg.DecimalType)
		return ok && t.Scale() == f.Scale() && t.Precision() >= f.Precision()
	case iceberg.DateType:
		switch to.(type) {
		case iceberg.TimestampType, iceberg.TimestampNsType:
			return true
		}
	}
	return false
}

// equalityBelow reports whether a data file of partition part with data
// sequence number seq is one that a removed equality delete (removed, see
// Scope.EqualityRemoved) applies to, and that delete's sequence number. An
// equality delete applies to data files whose data sequence number is
// strictly lower (spec, "Scan Planning"): an append after S has a higher
// one; only a rewrite that kept older sequence numbers has a lower one.
func equalityBelow(removed map[string]int64, part string, seq int64) (int64, bool) {
	for _, k := range []string{part, ""} {
		if eq, ok := removed[k]; ok && seq < eq {
			return eq, true
		}
	}
	return 0, false
}
