package s3requests

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestClassify_NamesEachOperationByItsRESTShape follows the S3 API
// reference's request syntax for each operation (path-style).
func TestClassify_NamesEachOperationByItsRESTShape(t *testing.T) {
	for _, c := range []struct {
		method, target, copySource, op, class string
	}{
		{"GET", "/b/wh/t/data/a.parquet", "", GetObject, ClassGet},
		{"HEAD", "/b/wh/t/data/a.parquet", "", HeadObject, ClassGet},
		{"GET", "/b?list-type=2&prefix=wh/", "", ListObjects, ClassPut},
		{"GET", "/b/", "", ListObjects, ClassPut},
		{"PUT", "/b/wh/t/data/a.parquet", "", PutObject, ClassPut},
		{"PUT", "/b/wh/t/data/b.parquet", "/b/wh/t/data/a.parquet", CopyObject, ClassPut},
		{"POST", "/b/wh/t/data/a.parquet?uploads", "", CreateMultipartUpload, ClassPut},
		{"PUT", "/b/wh/t/data/a.parquet?partNumber=2&uploadId=u1", "", UploadPart, ClassPut},
		{"POST", "/b/wh/t/data/a.parquet?uploadId=u1", "", CompleteMultipartUpload, ClassPut},
		{"DELETE", "/b/wh/t/data/a.parquet?uploadId=u1", "", AbortMultipartUpload, ClassFree},
		{"DELETE", "/b/wh/t/data/a.parquet", "", DeleteObject, ClassFree},
		{"POST", "/b?delete", "", DeleteObjects, ClassFree},
	} {
		r := httptest.NewRequest(c.method, c.target, nil)
		if c.copySource != "" {
			r.Header.Set("x-amz-copy-source", c.copySource)
		}
		if got := Classify(r); got != c.op || ClassOf(got) != c.class {
			t.Errorf("%s %s: %s (%s), want %s (%s)", c.method, c.target, got, ClassOf(got), c.op, c.class)
		}
	}
}

func TestCounts_SumByClassAndByObject(t *testing.T) {
	c := Counts{Ops: map[string]int64{GetObject: 5, HeadObject: 1, UploadPart: 3, PutObject: 1, DeleteObject: 4},
		Gets: map[string]int64{"/b/t/data/a": 2, "/b/t/data/b": 1, "/b/t/metadata/m.avro": 2}}
	if c.Class(ClassGet) != 6 || c.Class(ClassPut) != 4 || c.Class(ClassFree) != 4 || c.Total() != 14 {
		t.Fatalf("classes get %d put %d free %d total %d", c.Class(ClassGet), c.Class(ClassPut), c.Class(ClassFree), c.Total())
	}
	if c.GetsUnder("/data/") != 3 {
		t.Fatalf("GETs under /data/: %d, want 3", c.GetsUnder("/data/"))
	}
}

// TestProxy_AnAWSChunkedUploadIsStoredAsItsPlainBytes: an upload in S3's
// aws-chunked encoding (signed chunks, a trailing checksum), as AWS's SDK
// for Java sends it over plain HTTP, reaches the endpoint behind the proxy
// as the object's bytes alone, as S3 stores it; a plain upload is passed
// as it is.
func TestProxy_AnAWSChunkedUploadIsStoredAsItsPlainBytes(t *testing.T) {
	var got []string
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, string(b)+"|"+r.Header.Get("Content-Encoding")+"|"+r.Header.Get("X-Amz-Content-Sha256"))
	}))
	defer backend.Close()
	p, err := Start(backend.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	put := func(body string, headers map[string]string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPut, p.URL+"/bucket/key.json", strings.NewReader(body))
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	put("5;chunk-signature=abc\r\n{\"a\":\r\n3;chunk-signature=def\r\n 1}\r\n0;chunk-signature=ghi\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n",
		map[string]string{"X-Amz-Content-Sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", "Content-Encoding": "aws-chunked", "X-Amz-Decoded-Content-Length": "8"})
	put(`{"b": 2}`, map[string]string{"X-Amz-Content-Sha256": "UNSIGNED-PAYLOAD"})
	want := []string{`{"a": 1}||UNSIGNED-PAYLOAD`, `{"b": 2}||UNSIGNED-PAYLOAD`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("stored:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
