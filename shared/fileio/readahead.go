package fileio

import (
	"context"
	"io"
	iofs "io/fs"
	"sync"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
)

// Reading ahead. A rewriter reads its group's files one after the other:
// on S3 each whole read first waits for the object's first byte (tens of
// milliseconds for a small object), so a group of a thousand 1 MB files
// waits longer than it decodes, and Lambda bills the wait. ReadAhead
// starts the reads of the files a reader is about to open, a few at a
// time, in the order it will open them, so that each is in memory when
// the reader gets to it.
//
// Invariants:
//   - a file is still read with one GET: the reader's Open takes the
//     read-ahead copy, or reads the file itself when its read has not
//     started (and the read-ahead then skips it);
//   - what was read ahead and not yet opened is at most
//     Options.ReadAheadBytes (a single larger file excepted), on top of
//     the files being read;
//   - a read ahead that failed is not an error: the Open reads the file
//     again and answers what that read answers.

// Defaults of reading ahead.
const (
	// DefaultReadAheadBytes bounds what is read ahead and not yet opened.
	DefaultReadAheadBytes = 64 << 20
	// DefaultReadAheadFiles is how many files are read at once.
	DefaultReadAheadFiles = 8
)

// AheadFile is a file to read ahead, with its size from the manifest.
type AheadFile struct {
	Name string
	Size int64
}

// AheadOf names Iceberg data or delete files for ReadAhead, in their
// order, each once.
func AheadOf(files []iceberg.DataFile) []AheadFile {
	seen := map[string]bool{}
	var out []AheadFile
	for _, f := range files {
		if !seen[f.FilePath()] {
			seen[f.FilePath()] = true
			out = append(out, AheadFile{Name: f.FilePath(), Size: f.FileSizeBytes()})
		}
	}
	return out
}

// ReadAhead starts reading files whole, in order, ahead of a reader of fs
// that opens them in that order: files up to Options.WholeReadBytes, at
// most Options.ReadAheadFiles at once and Options.ReadAheadBytes read and
// not yet opened. Stop ends it and drops what no Open took; it waits for
// the reads in flight. An IO this package did not wrap (local files) is
// left alone, and so is an IO whose Options turned reading ahead off.
func ReadAhead(ctx context.Context, fs icebergio.IO, files []AheadFile) (stop func()) {
	s, ok := fs.(*objectIO)
	if !ok || s.o.ReadAheadFiles < 0 || s.o.WholeReadBytes < 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	ra := &readAhead{entries: map[string]*aheadRead{}, taken: map[string]bool{}}
	ra.cond = sync.NewCond(&ra.mu)
	s.cache.setAhead(ra)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		slots := make(chan struct{}, s.o.ReadAheadFiles)
		for _, f := range files {
			if f.Size <= 0 || f.Size > s.o.WholeReadBytes {
				continue
			}
			r, ok := ra.start(f, s.o.ReadAheadBytes)
			if !ok {
				return
			}
			if r == nil {
				continue
			}
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				r.err = ctx.Err()
				close(r.done)
				return
			}
			wg.Add(1)
			go func() {
				defer func() { <-slots; wg.Done() }()
				r.data, r.info, r.err = s.readWhole(f.Name)
				close(r.done)
			}()
		}
	}()
	return func() {
		cancel()
		ra.stop()
		wg.Wait()
		s.cache.clearAhead(ra)
	}
}

// readAhead is one ReadAhead's reads: started and not yet opened, and the
// names opened before their read started.
type readAhead struct {
	mu      sync.Mutex
	cond    *sync.Cond
	entries map[string]*aheadRead
	taken   map[string]bool
	held    int64
	stopped bool
}

// aheadRead is one file's read; done is closed when data, info and err
// are set.
type aheadRead struct {
	done chan struct{}
	size int64
	data []byte
	info fileInfo
	err  error
}

// start waits until f fits in the window of most bytes (or nothing is
// held) and records its read; nil when the reader already took f, false
// when stopped.
func (ra *readAhead) start(f AheadFile, most int64) (*aheadRead, bool) {
	ra.mu.Lock()
	defer ra.mu.Unlock()
	for !ra.stopped && ra.held > 0 && ra.held+f.Size > most {
		ra.cond.Wait()
	}
	if ra.stopped {
		return nil, false
	}
	if ra.taken[f.Name] || ra.entries[f.Name] != nil {
		return nil, true
	}
	r := &aheadRead{done: make(chan struct{}), size: f.Size}
	ra.entries[f.Name], ra.held = r, ra.held+f.Size
	return r, true
}

// take hands the reader name's read, or nil when it has not started (and
// then it never will).
func (ra *readAhead) take(name string) *aheadRead {
	ra.mu.Lock()
	defer ra.mu.Unlock()
	r, ok := ra.entries[name]
	if !ok {
		ra.taken[name] = true
		return nil
	}
	delete(ra.entries, name)
	ra.held -= r.size
	ra.cond.Broadcast()
	return r
}

func (ra *readAhead) stop() {
	ra.mu.Lock()
	defer ra.mu.Unlock()
	ra.stopped = true
	ra.entries, ra.held = map[string]*aheadRead{}, 0
	ra.cond.Broadcast()
}

// setAhead makes ra the cache's read-ahead, stopping the one before it.
func (c *Cache) setAhead(ra *readAhead) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ahead != nil {
		c.ahead.stop()
	}
	c.ahead = ra
}

// clearAhead drops ra from the cache unless another read-ahead replaced it.
func (c *Cache) clearAhead(ra *readAhead) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ahead == ra {
		c.ahead = nil
	}
}

// takeAhead is name's read ahead, waited for, when it succeeded.
func (c *Cache) takeAhead(name string) ([]byte, fileInfo, bool) {
	c.mu.Lock()
	ra := c.ahead
	c.mu.Unlock()
	if ra == nil {
		return nil, fileInfo{}, false
	}
	r := ra.take(name)
	if r == nil {
		return nil, fileInfo{}, false
	}
	<-r.done
	if r.err != nil {
		return nil, fileInfo{}, false
	}
	return r.data, r.info, true
}

// readWhole reads name whole with one GET.
func (s *objectIO) readWhole(name string) ([]byte, fileInfo, error) {
	f, err := s.FileIO.Open(name)
	if err != nil {
		return nil, fileInfo{}, err
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, fileInfo{}, err
	}
	data, err := readAll(name, f, st.Size())
	if err != nil {
		return nil, fileInfo{}, err
	}
	return data, fileInfo{name: st.Name(), size: st.Size(), mod: st.ModTime()}, nil
}

// readAll reads the size bytes of the open file f and closes it.
func readAll(name string, f icebergio.File, size int64) ([]byte, error) {
	data := make([]byte, size)
	_, rerr := io.ReadFull(f, data)
	cerr := f.Close()
	if rerr != nil {
		return nil, &iofs.PathError{Op: "open", Path: name, Err: rerr}
	}
	if cerr != nil {
		return nil, &iofs.PathError{Op: "open", Path: name, Err: cerr}
	}
	return data, nil
}
