package tests

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/config"
)

// restStandIn serves the Iceberg REST catalog endpoints iceberg-go's rest
// catalog uses (Apache Iceberg REST Catalog OpenAPI specification,
// open-api/rest-catalog-open-api.yaml): GET /v1/config, namespaces (list,
// load, create), tables (list, load, exists, create) and the commit
// (POST /v1/namespaces/{ns}/tables/{table}) with its requirements, which
// fails with 409 CommitFailedException when a requirement does not hold.
// Tables live in an in-process sql catalog that applies the requirements
// and updates exactly as iceberg-go does.
//
// Every request must carry a valid AWS SigV4 signature for the expected
// signing name (glue, or s3tables for S3 Tables) and region, made with the
// test credentials: the stand-in signs the request again and compares.
//
// Simpler than the AWS endpoints: no prefix or warehouse resolution (one
// catalog), no pagination, no vended credentials, no Lake Formation, and
// the signature check trusts the request's own X-Amz-Date.
type restStandIn struct {
	t       *testing.T
	backing catalog.Catalog
	service string
	region  string
	mu      sync.Mutex
	calls   map[string]int
	// locate, when set, chooses a new table's location, as S3 Tables does
	// (the request's location is ignored).
	locate func(ident table.Identifier) string
	// observe, when set, sees every request that passed the signature
	// check: its method and its path's parts after /v1/.
	observe func(method string, parts []string)
}

// newRESTStandIn starts a stand-in over a fresh sql catalog whose tables
// live under warehouse, written with the file IO properties props.
func newRESTStandIn(t *testing.T, service, region, warehouse string, props map[string]string) (*restStandIn, string) {
	t.Helper()
	dir := t.TempDir()
	backing, err := catalogs.Open(context.Background(), catalogs.Config{Type: "sql", Name: "rest-backing", URI: "file:" + filepath.Join(dir, "rest.db"), Warehouse: warehouse, Properties: props}, cloud.Clients.Config)
	if err != nil {
		t.Fatal(err)
	}
	s := &restStandIn{t: t, backing: backing, service: service, region: region, calls: map[string]int{}}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv.URL
}

type restError struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    int    `json:"code"`
	} `json:"error"`
}

func writeREST(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if v != nil {
		_ = json.NewEncoder(w).Encode(v)
	}
}

func restFail(w http.ResponseWriter, code int, typ, msg string) {
	var e restError
	e.Error.Message, e.Error.Type, e.Error.Code = msg, typ, code
	writeREST(w, code, e)
}

func (s *restStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if err := s.checkSignature(r, body); err != nil {
		restFail(w, http.StatusForbidden, "NotAuthorizedException", err.Error())
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/v1/")
	parts := strings.Split(path, "/")
	s.mu.Lock()
	s.calls[r.Method+" "+parts[0]]++
	s.mu.Unlock()
	if s.observe != nil {
		s.observe(r.Method, parts)
	}
	ctx := r.Context()
	nsOf := func(p string) table.Identifier { return strings.Split(p, "\x1f") }
	switch {
	case path == "config" && r.Method == http.MethodGet:
		writeREST(w, http.StatusOK, map[string]any{"defaults": map[string]string{}, "overrides": map[string]string{}})
	case path == "namespaces" && r.Method == http.MethodGet:
		nss, err := s.backing.ListNamespaces(ctx, nil)
		if err != nil {
			restFail(w, 500, "ServerError", err.Error())
			return
		}
		writeREST(w, 200, map[string]any{"namespaces": nss})
	case path == "namespaces" && r.Method == http.MethodPost:
		var req struct {
			Namespace  table.Identifier   `json:"namespace"`
			Properties iceberg.Properties `json:"properties"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			restFail(w, 400, "BadRequestException", err.Error())
			return
		}
		if err := s.backing.CreateNamespace(ctx, req.Namespace, req.Properties); err != nil {
			if errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
				restFail(w, 409, "AlreadyExistsException", err.Error())
				return
			}
			restFail(w, 500, "ServerError", err.Error())
			return
		}
		writeREST(w, 200, map[string]any{"namespace": req.Namespace, "properties": req.Properties})
	case len(parts) == 2 && parts[0] == "namespaces" && r.Method == http.MethodGet:
		props, err := s.backing.LoadNamespaceProperties(ctx, nsOf(parts[1]))
		if err != nil {
			restFail(w, 404, "NoSuchNamespaceException", err.Error())
			return
		}
		writeREST(w, 200, map[string]any{"namespace": nsOf(parts[1]), "properties": props})
	case len(parts) == 3 && parts[0] == "namespaces" && parts[2] == "tables" && r.Method == http.MethodGet:
		var ids []map[string]any
		for id, err := range s.backing.ListTables(ctx, nsOf(parts[1])) {
			if err != nil {
				restFail(w, 404, "NoSuchNamespaceException", err.Error())
				return
			}
			ids = append(ids, map[string]any{"namespace": id[:len(id)-1], "name": id[len(id)-1]})
		}
		writeREST(w, 200, map[string]any{"identifiers": ids})
	case len(parts) == 3 && parts[0] == "namespaces" && parts[2] == "tables" && r.Method == http.MethodPost:
		var req struct {
			Name          string                 `json:"name"`
			Schema        *iceberg.Schema        `json:"schema"`
			Location      string                 `json:"location"`
			PartitionSpec *iceberg.PartitionSpec `json:"partition-spec"`
			WriteOrder    *table.SortOrder       `json:"write-order"`
			Props         iceberg.Properties     `json:"properties"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			restFail(w, 400, "BadRequestException", err.Error())
			return
		}
		opts := []catalog.CreateTableOpt{catalog.WithProperties(req.Props)}
		if req.PartitionSpec != nil {
			opts = append(opts, catalog.WithPartitionSpec(req.PartitionSpec))
		}
		if req.WriteOrder != nil {
			opts = append(opts, catalog.WithSortOrder(*req.WriteOrder))
		}
		switch {
		case s.locate != nil:
			opts = append(opts, catalog.WithLocation(s.locate(append(nsOf(parts[1]), req.Name))))
		case req.Location != "":
			opts = append(opts, catalog.WithLocation(req.Location))
		}
		tbl, err := s.backing.CreateTable(ctx, append(nsOf(parts[1]), req.Name), req.Schema, opts...)
		if err != nil {
			if errors.Is(err, catalog.ErrTableAlreadyExists) {
				restFail(w, 409, "AlreadyExistsException", err.Error())
				return
			}
			restFail(w, 500, "ServerError", err.Error())
			return
		}
		writeREST(w, 200, map[string]any{"metadata-location": tbl.MetadataLocation(), "metadata": tbl.Metadata(), "config": map[string]string{}})
	case len(parts) == 4 && parts[0] == "namespaces" && parts[2] == "tables":
		ident := append(nsOf(parts[1]), parts[3])
		switch r.Method {
		case http.MethodHead, http.MethodGet:
			tbl, err := s.backing.LoadTable(ctx, ident)
			if err != nil {
				restFail(w, 404, "NoSuchTableException", err.Error())
				return
			}
			if r.Method == http.MethodHead {
				writeREST(w, 204, nil)
				return
			}
			writeREST(w, 200, map[string]any{"metadata-location": tbl.MetadataLocation(), "metadata": tbl.Metadata(), "config": map[string]string{}})
		case http.MethodPost:
			var req struct {
				Requirements table.Requirements `json:"requirements"`
				Updates      table.Updates      `json:"updates"`
			}
			if err := json.Unmarshal(body, &req); err != nil {
				restFail(w, 400, "BadRequestException", err.Error())
				return
			}
			meta, loc, err := s.backing.CommitTable(ctx, ident, req.Requirements, req.Updates)
			if err != nil {
				// The spec's 409: a requirement did not hold against the
				// table's current metadata.
				if strings.Contains(err.Error(), "requirement failed") || errors.Is(err, table.ErrCommitFailed) {
					restFail(w, 409, "CommitFailedException", err.Error())
					return
				}
				if errors.Is(err, catalog.ErrNoSuchTable) {
					restFail(w, 404, "NoSuchTableException", err.Error())
					return
				}
				restFail(w, 500, "ServerError", err.Error())
				return
			}
			writeREST(w, 200, map[string]any{"metadata-location": loc, "metadata": meta})
		default:
			restFail(w, 405, "BadRequestException", r.Method+" not served")
		}
	default:
		restFail(w, 400, "BadRequestException", r.Method+" "+r.URL.Path+" is not served by the test stand-in")
	}
}

// checkSignature signs a copy of the request with the test credentials,
// the expected signing name and region and the request's own time, and
// compares the result with the request's Authorization header.
func (s *restStandIn) checkSignature(r *http.Request, body []byte) error {
	auth := r.Header.Get("Authorization")
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 ") {
		return fmt.Errorf("request is not SigV4-signed")
	}
	scope := "/" + s.region + "/" + s.service + "/aws4_request"
	if !strings.Contains(auth, scope) {
		return fmt.Errorf("signature scope is not %s: %s", scope, auth)
	}
	when, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return fmt.Errorf("bad X-Amz-Date: %v", err)
	}
	creds, err := cloud.Clients.Config.Credentials.Retrieve(r.Context())
	if err != nil {
		return err
	}
	clone, err := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	signed := signedHeaders(auth)
	for name, vals := range r.Header {
		if signed[strings.ToLower(name)] && !strings.EqualFold(name, "Authorization") {
			clone.Header[name] = vals
		}
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	if h := r.Header.Get("X-Amz-Content-Sha256"); h != "" {
		hash = h
	}
	if err := v4.NewSigner().SignHTTP(r.Context(), creds, clone, hash, s.service, s.region, when); err != nil {
		return err
	}
	if got := clone.Header.Get("Authorization"); got != auth {
		return fmt.Errorf("signature does not verify:\n got  %s\n want %s", auth, got)
	}
	return nil
}

func signedHeaders(auth string) map[string]bool {
	out := map[string]bool{}
	_, after, ok := strings.Cut(auth, "SignedHeaders=")
	if !ok {
		return out
	}
	list, _, _ := strings.Cut(after, ",")
	for _, h := range strings.Split(list, ";") {
		out[h] = true
	}
	return out
}

// withREST points an env's catalog at a REST stand-in signed for service.
func withREST(t *testing.T, service string) (func(*config.Config), *restStandIn) {
	dir := t.TempDir()
	wh := "file://" + filepath.Join(dir, "warehouse")
	s, url := newRESTStandIn(t, service, "us-east-1", wh, nil)
	return func(c *config.Config) {
		c.Catalog = catalogs.Config{Type: "rest", Name: "test", URI: url, Warehouse: wh,
			SigV4: true, SigningName: service, SigningRegion: "us-east-1"}
	}, s
}
