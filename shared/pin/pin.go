// Package pin opens a table at a pinned metadata file, without any catalog.
//
// Rewriters read exactly the snapshot the planner pinned: the one current in
// that metadata file. A metadata file whose current snapshot is not the
// pinned one is rejected (ErrMismatch), because reading anything else could
// rewrite rows the plan did not account for.
package pin

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/fileio"
	"github.com/icekeeper/icekeeper/shared/messages"
)

// ErrMismatch means the metadata file does not pin the expected snapshot.
var ErrMismatch = errors.New("pin: metadata file does not pin the expected snapshot")

// Opener opens pinned tables with the given file IO properties (for example
// s3.endpoint or s3.region); nil properties use the SDK defaults. Their
// files are read and written through package fileio (IO tunes it).
type Opener struct {
	Properties map[string]string
	IO         fileio.Options
}

// Open reads the metadata file of p and checks its current snapshot is p's.
func (o Opener) Open(ctx context.Context, ident table.Identifier, p messages.Pin) (*table.Table, error) {
	tbl, err := o.OpenMetadata(ctx, ident, p.MetadataLocation)
	if err != nil {
		return nil, err
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil || snap.SnapshotID != p.SnapshotID || snap.SequenceNumber != p.SequenceNumber {
		return nil, fmt.Errorf("%w: %s (want snapshot %d seq %d)", ErrMismatch, p.MetadataLocation, p.SnapshotID, p.SequenceNumber)
	}
	return tbl, nil
}

// OpenMetadata reads the table at a metadata file, whatever its current
// snapshot (a deletion task checks files against the table as it was
// when they were listed).
func (o Opener) OpenMetadata(ctx context.Context, ident table.Identifier, metadataLocation string) (*table.Table, error) {
	props := map[string]string{}
	for k, v := range o.Properties {
		props[k] = v
	}
	tbl, err := table.NewFromLocation(ctx, ident, metadataLocation, fileio.LoadFunc(props, metadataLocation, o.IO), nil)
	if err != nil {
		return nil, fmt.Errorf("pin: open %s: %w", metadataLocation, err)
	}
	return tbl, nil
}
