// Package fileio is the table file IO icekeeper's workers read and write
// through: iceberg-go's own (io.LoadFS, any scheme it registers), with
// fewer requests to an object store.
//
// On S3, iceberg-go's blob file IO opens a file with one GET of the whole
// object and then serves every ReadAt (a Parquet footer, each column chunk)
// with another ranged GET, and it uploads new files in the transfer
// manager's default parts. For the small files compaction exists to merge,
// most of their cost is those requests. Here:
//
//   - a file no larger than Options.WholeReadBytes is read whole from the
//     body of the GET that opened it and served from memory: one GET per
//     small file, whatever the reader asks for;
//   - new files are uploaded in parts of Options.PartBytes with
//     Options.PartConcurrency parts in flight: a 256 MB file is 8 parts
//     of 32 MB instead of 32 of 8 MB. A file smaller than one part is one
//     PutObject.
//
// A caller that reads some files twice (a rewriter reads a group's
// position deletes and deletion vectors for its row map, then iceberg-go's
// scan reads them again) asks for them to be kept (Retain): the IOs of one
// pinned table share a Cache, and a kept file's second open costs no
// request. The cache holds at most its budget; past it, files are read
// again.
//
// Only reads and uploads change: every other call (remove, list, bulk
// delete) is iceberg-go's. Local files (file://) are left as they are.
package fileio

import (
	"bytes"
	"context"
	"fmt"
	"io"
	iofs "io/fs"
	pathpkg "path"
	"sync"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
	"gocloud.dev/blob"

	// Table file IO for s3:// locations (iceberg-go registers schemes this
	// way): workers open pinned tables without any catalog.
	_ "github.com/apache/iceberg-go/io/gocloud/s3"
)

// Defaults.
const (
	// DefaultWholeReadBytes: files up to 16 MiB are read in one request.
	// A rewriter opens a few files at a time, so this bounds the memory
	// it holds for whole reads to a few times 16 MiB.
	DefaultWholeReadBytes = 16 << 20
	// DefaultPartBytes: 32 MiB upload parts (S3 allows 5 MiB to 5 GiB).
	DefaultPartBytes = 32 << 20
	// DefaultPartConcurrency: parts in flight per upload; each holds a
	// part's buffer.
	DefaultPartConcurrency = 2
)

// Options tune the IO; zero values take the defaults. WholeReadBytes < 0
// turns whole reads off.
type Options struct {
	WholeReadBytes  int64
	PartBytes       int
	PartConcurrency int
}

func (o Options) withDefaults() Options {
	if o.WholeReadBytes == 0 {
		o.WholeReadBytes = DefaultWholeReadBytes
	}
	if o.PartBytes == 0 {
		o.PartBytes = DefaultPartBytes
	}
	if o.PartConcurrency == 0 {
		o.PartConcurrency = DefaultPartConcurrency
	}
	return o
}

// Validate reports options S3 cannot take.
func (o Options) Validate() error {
	if o.PartBytes != 0 && o.PartBytes < 5<<20 {
		return fmt.Errorf("fileio: upload parts of %d bytes: S3 needs at least 5 MiB", o.PartBytes)
	}
	if o.PartConcurrency < 0 {
		return fmt.Errorf("fileio: %d parts in flight: want a positive number", o.PartConcurrency)
	}
	return nil
}

// LoadFunc is io.LoadFSFunc with the IO wrapped (for table.NewFromLocation).
// Every IO it loads shares one Cache.
func LoadFunc(props map[string]string, location string, o Options) func(ctx context.Context) (icebergio.IO, error) {
	load := icebergio.LoadFSFunc(props, location)
	cache := NewCache(DefaultCacheBytes)
	return func(ctx context.Context) (icebergio.IO, error) {
		fs, err := load(ctx)
		if err != nil {
			return nil, err
		}
		return wrap(ctx, fs, o, cache), nil
	}
}

// Wrap returns fs with fewer object-store requests, or fs itself when it
// is not an object store's IO.
func Wrap(ctx context.Context, fs icebergio.IO, o Options) icebergio.IO {
	return wrap(ctx, fs, o, NewCache(DefaultCacheBytes))
}

func wrap(ctx context.Context, fs icebergio.IO, o Options, cache *Cache) icebergio.IO {
	b, ok := fs.(*blobfs.FileIO)
	if !ok {
		return fs
	}
	return &objectIO{FileIO: b, ctx: ctx, o: o.withDefaults(), cache: cache}
}

// DefaultCacheBytes is the most a Cache keeps.
const DefaultCacheBytes = 64 << 20

// Cache keeps, for the IOs that share it, the contents of the files asked
// to be kept (Retain) once they have been read whole.
type Cache struct {
	mu         sync.Mutex
	want       map[string]bool
	data       map[string][]byte
	size, most int64
}

// NewCache returns a cache that keeps at most most bytes.
func NewCache(most int64) *Cache {
	return &Cache{want: map[string]bool{}, data: map[string][]byte{}, most: most}
}

// Retain asks fs to keep the named files once read (no-op for an IO this
// package did not wrap).
func Retain(fs icebergio.IO, names ...string) {
	s, ok := fs.(*objectIO)
	if !ok {
		return
	}
	s.cache.mu.Lock()
	defer s.cache.mu.Unlock()
	for _, n := range names {
		s.cache.want[n] = true
	}
}

func (c *Cache) get(name string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.data[name]
	return b, ok
}

func (c *Cache) offer(name string, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.data[name]; ok || !c.want[name] || c.size+int64(len(b)) > c.most {
		return
	}
	c.data[name], c.size = b, c.size+int64(len(b))
}

// objectIO is a blob file IO (every method of iceberg-go's, so its
// optional interfaces stay) with its own Open and Create.
type objectIO struct {
	*blobfs.FileIO
	ctx   context.Context
	o     Options
	cache *Cache
}

// Open opens name with one GET (none for a kept file read before); a file
// no larger than WholeReadBytes is read whole from that GET's body and
// served from memory.
func (s *objectIO) Open(name string) (icebergio.File, error) {
	if b, ok := s.cache.get(name); ok {
		return &wholeFile{Reader: bytes.NewReader(b), info: fileInfo{name: pathpkg.Base(name), size: int64(len(b))}}, nil
	}
	f, err := s.FileIO.Open(name)
	if err != nil || s.o.WholeReadBytes < 0 {
		return f, err
	}
	st, err := f.Stat()
	if err != nil || st.Size() > s.o.WholeReadBytes {
		return f, nil
	}
	data := make([]byte, st.Size())
	_, rerr := io.ReadFull(f, data)
	cerr := f.Close()
	if rerr != nil {
		return nil, &iofs.PathError{Op: "open", Path: name, Err: rerr}
	}
	if cerr != nil {
		return nil, &iofs.PathError{Op: "open", Path: name, Err: cerr}
	}
	s.cache.offer(name, data)
	return &wholeFile{Reader: bytes.NewReader(data), info: fileInfo{name: st.Name(), size: st.Size(), mod: st.ModTime()}}, nil
}

// Create uploads name in parts of PartBytes.
func (s *objectIO) Create(name string) (icebergio.FileWriter, error) {
	return s.FileIO.NewWriter(s.ctx, name, true, &blob.WriterOptions{BufferSize: s.o.PartBytes, MaxConcurrency: s.o.PartConcurrency})
}

// wholeFile is a file read whole into memory.
type wholeFile struct {
	*bytes.Reader
	info fileInfo
}

func (f *wholeFile) Stat() (iofs.FileInfo, error) { return f.info, nil }
func (f *wholeFile) Close() error                 { return nil }

type fileInfo struct {
	name string
	size int64
	mod  time.Time
}

func (i fileInfo) Name() string        { return i.name }
func (i fileInfo) Size() int64         { return i.size }
func (i fileInfo) Mode() iofs.FileMode { return iofs.ModeIrregular }
func (i fileInfo) ModTime() time.Time  { return i.mod }
func (i fileInfo) IsDir() bool         { return false }
func (i fileInfo) Sys() any            { return nil }
