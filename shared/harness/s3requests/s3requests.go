// Package s3requests counts the S3 requests that go through it: a
// reverse proxy on loopback in front of an S3 endpoint (the emulator's
// here, any S3-compatible endpoint in general), for the benchmark and the
// tests that hold icekeeper to a request budget. It classifies each
// request by its REST shape (method, query and headers, as the S3 API
// reference defines the operations) and adds it to its billing class.
//
// It counts what any engine sends, iceberg-go's file IO or icekeeper's,
// so that engines are compared on the same counter.
package s3requests

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Operation names (the S3 API's).
const (
	GetObject               = "GetObject"
	HeadObject              = "HeadObject"
	PutObject               = "PutObject"
	CopyObject              = "CopyObject"
	UploadPart              = "UploadPart"
	CreateMultipartUpload   = "CreateMultipartUpload"
	CompleteMultipartUpload = "CompleteMultipartUpload"
	AbortMultipartUpload    = "AbortMultipartUpload"
	ListObjects             = "ListObjects"
	DeleteObject            = "DeleteObject"
	DeleteObjects           = "DeleteObjects"
	Other                   = "Other"
)

// Billing classes of S3 Standard requests (Amazon S3 pricing, "Requests
// & data retrievals"): PUT, COPY, POST and LIST requests are priced
// together, GET, SELECT and all other requests together; DELETE and
// CANCEL (abort) requests are free.
const (
	ClassPut  = "put"
	ClassGet  = "get"
	ClassFree = "free"
)

// ClassOf is the billing class of an operation.
func ClassOf(op string) string {
	switch op {
	case PutObject, CopyObject, UploadPart, CreateMultipartUpload, CompleteMultipartUpload, ListObjects:
		return ClassPut
	case DeleteObject, DeleteObjects, AbortMultipartUpload:
		return ClassFree
	}
	return ClassGet
}

// Classify names the S3 operation of a request (path-style or
// virtual-hosted: only the method, query and headers are read).
func Classify(r *http.Request) string {
	q := r.URL.Query()
	has := func(k string) bool { _, ok := q[k]; return ok }
	switch r.Method {
	case http.MethodGet:
		if has("list-type") || has("prefix") || has("delimiter") || has("marker") || has("continuation-token") || objectKey(r.URL.Path) == "" {
			return ListObjects
		}
		return GetObject
	case http.MethodHead:
		return HeadObject
	case http.MethodPut:
		switch {
		case has("partNumber") && has("uploadId"):
			return UploadPart
		case r.Header.Get("x-amz-copy-source") != "":
			return CopyObject
		}
		return PutObject
	case http.MethodPost:
		switch {
		case has("uploads"):
			return CreateMultipartUpload
		case has("uploadId"):
			return CompleteMultipartUpload
		case has("delete"):
			return DeleteObjects
		}
	case http.MethodDelete:
		if has("uploadId") {
			return AbortMultipartUpload
		}
		return DeleteObject
	}
	return Other
}

// objectKey is what follows the bucket in a path-style path ("" for a
// request on the bucket itself).
func objectKey(path string) string {
	for len(path) > 0 && path[0] == '/' {
		path = path[1:]
	}
	for i := 0; i < len(path); i++ {
		if path[i] == '/' {
			return path[i+1:]
		}
	}
	return ""
}

// Counts are requests by operation, and the bytes of object bodies sent
// (PutObject, UploadPart) and received (GetObject).
type Counts struct {
	Ops       map[string]int64
	BytesUp   int64
	BytesDown int64
	// Gets counts the GETs of each object (its request path).
	Gets map[string]int64 `json:"-"`
	// MostGetsInFlight is the most GETs the proxy was serving at once,
	// OverlappedGets the GETs that arrived while another was served.
	MostGetsInFlight int64 `json:",omitempty"`
	OverlappedGets   int64 `json:",omitempty"`
}

// Class sums the operations of one billing class.
func (c Counts) Class(class string) int64 {
	var n int64
	for op, k := range c.Ops {
		if ClassOf(op) == class {
			n += k
		}
	}
	return n
}

// GetsUnder sums the GETs of objects whose path contains part (for
// example "/data/", a table's data and delete files).
func (c Counts) GetsUnder(part string) int64 {
	var n int64
	for k, v := range c.Gets {
		if strings.Contains(k, part) {
			n += v
		}
	}
	return n
}

// Total is every request counted.
func (c Counts) Total() int64 {
	var n int64
	for _, k := range c.Ops {
		n += k
	}
	return n
}

// Sorted lists the operations counted, by name.
func (c Counts) Sorted() []string {
	out := make([]string, 0, len(c.Ops))
	for op := range c.Ops {
		out = append(out, op)
	}
	sort.Strings(out)
	return out
}

// Proxy is a counting reverse proxy.
type Proxy struct {
	// URL is the proxy's endpoint (use it as s3.endpoint).
	URL  string
	stop func() error
	mu   sync.Mutex
	c    Counts
	// latency is held before each request is forwarded (SetLatency).
	latency atomic.Int64
	// gets is the GETs being served.
	gets int64
}

// SetLatency holds every request d before forwarding it (0: none), as
// S3's time to first byte would: the emulator answers in microseconds,
// S3 in tens of milliseconds for small objects ("Timeouts and Retries for
// Latency-Sensitive Applications", AWS's S3 performance whitepaper), and
// a reader that waits for each file in turn pays that on every file.
func (p *Proxy) SetLatency(d time.Duration) { p.latency.Store(int64(d)) }

// Serve serves handle on a free loopback port in front of target: handle
// gets each request and forward, the reverse proxy to target (a counting
// proxy counts and forwards). It answers the proxy's URL and what stops
// it.
func Serve(target string, handle func(w http.ResponseWriter, r *http.Request, forward http.Handler)) (string, func() error, error) {
	u, err := url.Parse(target)
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = ProxyTransport()
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handle(w, r, rp) })}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), srv.Close, nil
}

// ProxyTransport is the transport a reverse proxy of the harness forwards
// with, in front of the emulator.
//
// A pool of connections of its own: on http.DefaultTransport, shared by
// the whole process, a response the emulator was sending was now and
// then cut short ("ReverseProxy read error during body copy: use of
// closed network connection"; the client: "deserialization failed,
// unexpected EOF"): an SQS message in it came back only after its
// visibility timeout, a 60 s stall of the benchmark's pipeline.
//
// And request bodies that end with io.EOF once closed: the transport's
// write goroutine, finishing a request after its answer came, reads the
// body once more to see it has ended, and the proxy's incoming body,
// closed by then, answers "invalid Read on closed Body", which the
// transport takes for a failed write and closes the connection under the
// answer it is reading (the SDK's side of the same race:
// localcloud.PlainRequestBodies).
func ProxyTransport() http.RoundTripper {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	return eofAfterClose{tr}
}

type eofAfterClose struct{ next http.RoundTripper }

func (t eofAfterClose) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = &closedEOF{rc: r.Body}
	}
	return t.next.RoundTrip(r)
}

// closedEOF is a body whose reads after Close answer io.EOF.
type closedEOF struct {
	mu     sync.Mutex
	rc     io.ReadCloser
	closed bool
}

func (b *closedEOF) Read(p []byte) (int, error) {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return 0, io.EOF
	}
	return b.rc.Read(p)
}

func (b *closedEOF) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return b.rc.Close()
}

// Start serves a counting proxy to target on a free loopback port.
func Start(target string) (*Proxy, error) {
	p := &Proxy{c: Counts{Ops: map[string]int64{}, Gets: map[string]int64{}}}
	var err error
	p.URL, p.stop, err = Serve(target, func(w http.ResponseWriter, r *http.Request, rp http.Handler) {
		// Counted when it arrives: a client may read the whole response
		// before this handler returns, and count right after.
		op := Classify(r)
		p.mu.Lock()
		p.c.Ops[op]++
		switch op {
		case PutObject, UploadPart:
			p.c.BytesUp += max(r.ContentLength, 0)
		case GetObject:
			p.c.Gets[r.URL.Path]++
			if p.gets > 0 {
				p.c.OverlappedGets++
			}
			p.gets++
			p.c.MostGetsInFlight = max(p.c.MostGetsInFlight, p.gets)
		}
		p.mu.Unlock()
		if op == GetObject {
			defer func() {
				p.mu.Lock()
				p.gets--
				p.mu.Unlock()
			}()
		}
		if err := decodeAWSChunked(r); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if d := time.Duration(p.latency.Load()); d > 0 {
			time.Sleep(d)
		}
		cw := &ResponseCounter{ResponseWriter: w}
		rp.ServeHTTP(cw, r)
		if op == GetObject {
			p.mu.Lock()
			p.c.BytesDown += cw.N
			p.mu.Unlock()
		}
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Counts returns what was counted since the start or the last Reset.
func (p *Proxy) Counts() Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := Counts{Ops: make(map[string]int64, len(p.c.Ops)), BytesUp: p.c.BytesUp, BytesDown: p.c.BytesDown, Gets: make(map[string]int64, len(p.c.Gets)), MostGetsInFlight: p.c.MostGetsInFlight, OverlappedGets: p.c.OverlappedGets}
	for k, v := range p.c.Ops {
		out.Ops[k] = v
	}
	for k, v := range p.c.Gets {
		out.Gets[k] = v
	}
	return out
}

// Reset zeroes the counts.
func (p *Proxy) Reset() {
	p.mu.Lock()
	p.c = Counts{Ops: map[string]int64{}, Gets: map[string]int64{}}
	p.mu.Unlock()
}

// Close stops the proxy.
func (p *Proxy) Close() error { return p.stop() }

// ResponseCounter passes a response through, counting its body's bytes
// (N) and, when Body is set, keeping them there.
type ResponseCounter struct {
	http.ResponseWriter
	N    int64
	Body *bytes.Buffer
}

func (w *ResponseCounter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.N += int64(n)
	if w.Body != nil {
		w.Body.Write(b[:n])
	}
	return n, err
}

// Flush lets streamed responses through.
func (w *ResponseCounter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// decodeAWSChunked turns an upload in S3's aws-chunked encoding (each
// chunk "size-in-hex[;chunk-signature=...]\r\n" then its bytes and
// "\r\n", a zero-size chunk last, trailing checksums after it) into its
// plain body, as S3 itself does on receipt. AWS's SDKs send uploads so
// over plain HTTP (Iceberg Java's S3FileIO among them); the emulator
// behind this proxy would store the encoding as the object's bytes.
// Checksums and chunk signatures are not verified.
func decodeAWSChunked(r *http.Request) error {
	if !strings.HasPrefix(r.Header.Get("X-Amz-Content-Sha256"), "STREAMING-") && !strings.Contains(r.Header.Get("Content-Encoding"), "aws-chunked") {
		return nil
	}
	br := bufio.NewReader(r.Body)
	var body bytes.Buffer
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return fmt.Errorf("s3requests: aws-chunked body: %w", err)
		}
		size, _, _ := strings.Cut(strings.TrimSpace(line), ";")
		n, err := strconv.ParseInt(size, 16, 64)
		if err != nil {
			return fmt.Errorf("s3requests: aws-chunked body: chunk size %q: %w", size, err)
		}
		if n == 0 {
			break // the trailers follow
		}
		if _, err := io.CopyN(&body, br, n); err != nil {
			return fmt.Errorf("s3requests: aws-chunked body: %w", err)
		}
		if _, err := br.ReadString('\n'); err != nil {
			return fmt.Errorf("s3requests: aws-chunked body: %w", err)
		}
	}
	_ = r.Body.Close()
	r.Body = io.NopCloser(&body)
	r.ContentLength = int64(body.Len())
	r.Header.Set("Content-Length", strconv.Itoa(body.Len()))
	r.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	for _, h := range []string{"X-Amz-Decoded-Content-Length", "X-Amz-Trailer", "X-Amz-Sdk-Checksum-Algorithm"} {
		r.Header.Del(h)
	}
	var enc []string
	for _, e := range strings.Split(r.Header.Get("Content-Encoding"), ",") {
		if e = strings.TrimSpace(e); e != "" && e != "aws-chunked" {
			enc = append(enc, e)
		}
	}
	if len(enc) == 0 {
		r.Header.Del("Content-Encoding")
	} else {
		r.Header.Set("Content-Encoding", strings.Join(enc, ","))
	}
	return nil
}
