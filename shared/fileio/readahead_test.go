package fileio_test

import (
	"context"
	"errors"
	iofs "io/fs"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/shared/fileio"
	"github.com/icekeeper/icekeeper/shared/harness/s3requests"
)

// aheadFiles writes n files of size bytes (each its own content) and
// returns them in the order a reader would open them.
func aheadFiles(t *testing.T, props map[string]string, root string, n, size int) ([]fileio.AheadFile, map[string][]byte) {
	t.Helper()
	fs := load(t, props, root, fileio.Options{})
	var files []fileio.AheadFile
	data := map[string][]byte{}
	for i := range n {
		name := root + "/data/" + string(rune('a'+i)) + ".parquet"
		b := payload(size)
		b[0], b[len(b)-1] = byte(i), byte(i) // each file its own bytes
		write(t, fs, name, b)
		files = append(files, fileio.AheadFile{Name: name, Size: int64(size)})
		data[name] = b
	}
	return files, data
}

// TestReadAhead_ReadsOverlapAndEachFileIsStillOneGet: with S3's latency
// held on every request, a reader that opens twelve files in turn after
// ReadAhead finds them read several at a time, one GET each, with the
// same bytes; without ReadAhead its GETs come one after the other.
func TestReadAhead_ReadsOverlapAndEachFileIsStillOneGet(t *testing.T) {
	p, props, root := s3Env(t)
	files, data := aheadFiles(t, props, root, 12, 600_000)
	p.SetLatency(20 * time.Millisecond)
	for _, ahead := range []bool{false, true} {
		fs := load(t, props, root, fileio.Options{})
		p.Reset()
		stop := func() {}
		if ahead {
			stop = fileio.ReadAhead(context.Background(), fs, files)
		}
		for _, f := range files {
			readLikeParquet(t, fs, f.Name, data[f.Name])
		}
		stop()
		c := p.Counts()
		if got := c.Ops[s3requests.GetObject]; got != int64(len(files)) {
			t.Fatalf("read ahead %v: %d GETs for %d files, want one each", ahead, got, len(files))
		}
		if ahead && c.MostGetsInFlight < 2 {
			t.Fatalf("read ahead: at most %d GET in flight, want reads that overlap", c.MostGetsInFlight)
		}
		if !ahead && c.MostGetsInFlight != 1 {
			t.Fatalf("no read ahead: %d GETs in flight at once, want one after the other", c.MostGetsInFlight)
		}
	}
}

// TestReadAhead_AReaderInAnotherOrderStillReadsEachFileOnce: opened in
// the reverse order, some files are read by the reader itself before
// their read ahead started, which then skips them: every file is still
// read once, with its own bytes, and what no one opened is dropped.
func TestReadAhead_AReaderInAnotherOrderStillReadsEachFileOnce(t *testing.T) {
	p, props, root := s3Env(t)
	files, data := aheadFiles(t, props, root, 10, 600_000)
	fs := load(t, props, root, fileio.Options{ReadAheadFiles: 2, ReadAheadBytes: 1_300_000})
	p.Reset()
	stop := fileio.ReadAhead(context.Background(), fs, files)
	reversed := slices.Clone(files)
	slices.Reverse(reversed)
	for _, f := range reversed[:8] {
		readLikeParquet(t, fs, f.Name, data[f.Name])
	}
	stop()
	if got := p.Counts().Ops[s3requests.GetObject]; got > int64(len(files)) {
		t.Fatalf("%d GETs for %d files, want at most one each", got, len(files))
	}
	// After stop, an open reads the file itself.
	for _, f := range reversed[8:] {
		readLikeParquet(t, fs, f.Name, data[f.Name])
	}
}

// TestReadAhead_AFailedReadIsTheOpensOwnAnswer: a file that is not there
// fails its read ahead quietly; the reader's Open answers not-exist as it
// would without reading ahead, and the files after it are read.
func TestReadAhead_AFailedReadIsTheOpensOwnAnswer(t *testing.T) {
	_, props, root := s3Env(t)
	files, data := aheadFiles(t, props, root, 3, 600_000)
	missing := fileio.AheadFile{Name: root + "/data/missing.parquet", Size: 600_000}
	fs := load(t, props, root, fileio.Options{})
	stop := fileio.ReadAhead(context.Background(), fs, append([]fileio.AheadFile{missing}, files...))
	defer stop()
	if _, err := fs.Open(missing.Name); !errors.Is(err, iofs.ErrNotExist) {
		t.Fatalf("open of a missing file: %v, want not-exist", err)
	}
	for _, f := range files {
		readLikeParquet(t, fs, f.Name, data[f.Name])
	}
}

// TestReadAhead_ANewReadAheadReplacesTheOldOneAndOutlivesItsStop: a second
// ReadAhead on the same table's IOs stops the first; stopping the first
// afterwards leaves the second reading ahead: each of its files is read
// once, by it (had the first's stop dropped it, the reader would read
// each again).
func TestReadAhead_ANewReadAheadReplacesTheOldOneAndOutlivesItsStop(t *testing.T) {
	p, props, root := s3Env(t)
	files, data := aheadFiles(t, props, root, 8, 600_000)
	fs := load(t, props, root, fileio.Options{})
	p.Reset()
	p.SetLatency(20 * time.Millisecond)
	stopFirst := fileio.ReadAhead(context.Background(), fs, files[:4])
	stopSecond := fileio.ReadAhead(context.Background(), fs, files[4:])
	defer stopSecond()
	stopFirst()
	for _, f := range files[4:] {
		readLikeParquet(t, fs, f.Name, data[f.Name])
	}
	c := p.Counts()
	for _, f := range files[4:] {
		if n := c.Gets[strings.TrimPrefix(f.Name, "s3:/")]; n != 1 {
			t.Errorf("%s read with %d GETs, want one (%v)", f.Name, n, c.Gets)
		}
	}
	if c.MostGetsInFlight < 2 {
		t.Errorf("at most %d GET in flight: want the second read-ahead's reads to overlap", c.MostGetsInFlight)
	}
	for _, f := range files[:4] {
		readLikeParquet(t, fs, f.Name, data[f.Name])
	}
}
