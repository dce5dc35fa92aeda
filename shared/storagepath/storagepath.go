// Package storagepath says whether two spellings of a file's location name
// the same file, as Iceberg Java's DeleteOrphanFiles decides it
// (apache/iceberg, spark/v3.5/spark/src/main/java/org/apache/iceberg/spark/
// actions/DeleteOrphanFilesSparkAction.java: ToFileURI, FindOrphanFiles and
// findOrphanFiles). A location is split into a scheme, an authority and a
// path; files are matched by path; the schemes s3a and s3n are the scheme
// s3 (its EQUAL_SCHEMES_DEFAULT), no authorities are equal but equal ones
// (its equalAuthorities default is empty); and a listed file whose path a
// referenced file has, but whose scheme or authority differs from every
// such reference, is a conflict (its default PrefixMismatchMode.ERROR): it
// is neither referenced nor an orphan, and the caller must stop.
//
// Invariants:
//   - Same(a, b) is true only when a and b have the same path, and either
//     the same scheme family and authority, or b (the reference) names no
//     scheme or authority (as Java's uriComponentMatch);
//   - a local path and a file: URI of it are the same file (a location
//     without a scheme is local, as iceberg-go's io.LoadFS has it);
//   - paths are cleaned (repeated and trailing slashes, . and ..) and never
//     unescaped, on both sides alike: cleaning can only make two names
//     match, so a file is at worst kept, never deleted for a spelling;
//   - nothing here reads storage.
package storagepath

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"
)

// Sentinel errors.
var (
	// ErrMismatch: a listed file and a referenced one have the same path
	// but a different scheme or authority; whether they are one file is
	// not known (Java's PrefixMismatchMode.ERROR). Not retryable.
	ErrMismatch = errors.New("storagepath: a listed file and a referenced file differ only in scheme or authority")
	// ErrUnsupported: a location whose scheme the comparison does not
	// cover (only the s3 family and local files are). Not retryable.
	ErrUnsupported = errors.New("storagepath: unsupported location scheme")
)

// Schemes of the families Parse maps every spelling to.
const (
	SchemeS3   = "s3"
	SchemeFile = "file"
)

// equalSchemes maps a scheme to its family (Java's EQUAL_SCHEMES_DEFAULT,
// s3n,s3a -> s3), and no scheme to file.
var equalSchemes = map[string]string{"s3a": SchemeS3, "s3n": SchemeS3, "": SchemeFile}

// Path is a location split as Java's ToFileURI splits it.
type Path struct {
	// Scheme is the scheme's family, lower case: "s3" for s3, s3a and s3n,
	// "file" for a file: URI or a local path.
	Scheme string
	// Authority is the bucket (or a file: URI's host), as written.
	Authority string
	// Path is the cleaned path, beginning with "/".
	Path string
	// Raw is the location as given.
	Raw string
}

// Parse splits a location. It never fails: a location it cannot split is
// a local path.
func Parse(uri string) Path {
	p := Path{Raw: uri}
	rest := uri
	switch i := schemeEnd(uri); {
	case i >= 0:
		p.Scheme, rest = strings.ToLower(uri[:i]), uri[i+1:]
		if strings.HasPrefix(rest, "//") {
			rest = rest[2:]
			j := strings.IndexByte(rest, '/')
			if j < 0 {
				j = len(rest)
			}
			p.Authority, rest = rest[:j], rest[j:]
		}
	default:
		rest = filepath.ToSlash(uri)
	}
	if f, ok := equalSchemes[p.Scheme]; ok {
		p.Scheme = f
	}
	p.Path = path.Clean("/" + rest)
	return p
}

// schemeEnd is the index of the colon that ends uri's scheme, or -1 (RFC
// 3986: a letter, then letters, digits, "+", "-" or "."). A one-letter
// scheme is a drive letter, not a scheme.
func schemeEnd(uri string) int {
	for i, r := range uri {
		switch {
		case r == ':':
			if i < 2 {
				return -1
			}
			return i
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.'):
		default:
			return -1
		}
	}
	return -1
}

// String is the location as given.
func (p Path) String() string { return p.Raw }

// Root says whether p is a bucket or a filesystem root.
func (p Path) Root() bool { return p.Path == "/" }

// Same says whether listed and ref name the same file: the same path, and
// the same scheme family and authority, or none in ref (Java's
// uriComponentMatch: an empty referenced component matches any).
func Same(listed, ref Path) bool {
	return listed.Path == ref.Path && !conflicts(listed, ref)
}

// conflicts says whether ref's scheme or authority differs from listed's.
func conflicts(listed, ref Path) bool {
	return ref.Scheme != "" && !strings.EqualFold(ref.Scheme, listed.Scheme) ||
		ref.Authority != "" && !strings.EqualFold(ref.Authority, listed.Authority)
}

// Within says whether p is location or under it: the same scheme family
// and authority, and a path at or under location's.
func Within(location, p string) bool {
	l, q := Parse(location), Parse(p)
	if !strings.EqualFold(l.Scheme, q.Scheme) || !strings.EqualFold(l.Authority, q.Authority) {
		return false
	}
	return q.Path == l.Path || strings.HasPrefix(q.Path, strings.TrimSuffix(l.Path, "/")+"/")
}

// Supported says whether location's scheme is one the comparison covers
// (s3, s3a, s3n, file, or a local path); ErrUnsupported otherwise.
func Supported(location string) error {
	switch Parse(location).Scheme {
	case SchemeS3, SchemeFile:
		return nil
	}
	return fmt.Errorf("%w: %s (only s3, s3a, s3n and local files are compared as Iceberg's DeleteOrphanFiles does)", ErrUnsupported, location)
}

// Mismatch is the error of a listed file whose path a referenced file has
// with another scheme or authority. It wraps ErrMismatch.
type Mismatch struct {
	Listed, Referenced string
}

func (m *Mismatch) Error() string {
	return fmt.Sprintf("%s and the referenced %s have the same path but a different scheme or authority: whether they are one file is not known", m.Listed, m.Referenced)
}

// Unwrap makes errors.Is(err, ErrMismatch) true.
func (m *Mismatch) Unwrap() error { return ErrMismatch }

// Set is a set of referenced locations, looked up by listed ones.
type Set struct {
	byPath map[string][]Path
}

// NewSet makes an empty set.
func NewSet() *Set { return &Set{byPath: map[string][]Path{}} }

// Add adds a referenced location ("" is ignored).
func (s *Set) Add(ref string) {
	if ref == "" {
		return
	}
	p := Parse(ref)
	for _, q := range s.byPath[p.Path] {
		if q.Scheme == p.Scheme && q.Authority == p.Authority {
			return
		}
	}
	s.byPath[p.Path] = append(s.byPath[p.Path], p)
}

// Len is the number of distinct locations added.
func (s *Set) Len() int {
	n := 0
	for _, ps := range s.byPath {
		n += len(ps)
	}
	return n
}

// Has says whether listed names a file of the set (Same). When members
// have its path but none is the same file, it returns a *Mismatch (which
// wraps ErrMismatch) naming listed and one such member.
func (s *Set) Has(listed string) (bool, error) {
	l := Parse(listed)
	refs := s.byPath[l.Path]
	for _, r := range refs {
		if Same(l, r) {
			return true, nil
		}
	}
	if len(refs) > 0 {
		return false, &Mismatch{Listed: listed, Referenced: refs[0].Raw}
	}
	return false, nil
}

// PathUnder says whether p's path is dir's path or under it, whatever
// their schemes and authorities: the filter that keeps the references
// that may match a listing of dir (one of another scheme or authority
// must be kept, to be found as a mismatch).
func PathUnder(dir, p string) bool {
	d, q := Parse(dir).Path, Parse(p).Path
	return q == d || strings.HasPrefix(q, strings.TrimSuffix(d, "/")+"/")
}

// Key is a file's identity for sets of files to keep or delete: two
// locations with the same key name the same file (same scheme family,
// authority and cleaned path: s3a://b/k and s3://b/k are one object).
// Locations with different keys may still be one file only where an
// authority is left out, which Key keeps apart: a set keyed by Key can
// only keep a file for a spelling, never delete one that another spelling
// of the same key protects.
func Key(uri string) string {
	p := Parse(uri)
	return p.Scheme + "://" + p.Authority + p.Path
}
