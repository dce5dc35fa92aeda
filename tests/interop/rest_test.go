package interop

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/icekeeper/icekeeper/shared/harness/sparkdriver"
)

// restDir is the Maven module that resolves the REST catalog server's
// classpath (tests/interop/restserver).
const restDir = "restserver"

// errRESTNotSetUp means the REST catalog server's classpath was not
// resolved.
var errRESTNotSetUp = errors.New("interop: the REST catalog server is not built " +
	"(run make interop-setup, or: cd tests/interop/restserver && mvn -B -q dependency:build-classpath -Dmdep.outputFile=target/classpath.txt)")

// restServer is the URI of the world's REST catalog: Apache Iceberg's own
// REST catalog server (RESTCatalogServer, the fixture of Iceberg's REST
// compatibility kit) over a JdbcCatalog on a sqlite file in the world's
// directory, with the world's warehouse. The first call starts it; later
// calls return the same URI. It stops when the test ends.
func (w *world) restServer() string {
	w.t.Helper()
	if w.restURI != "" {
		return w.restURI
	}
	uri, stop, err := startRESTServer(w.dir, w.warehouse())
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(stop)
	w.restURI = uri
	return uri
}

// startRESTServer starts a REST catalog server whose catalog and
// warehouse live under dir and waits until it answers GET /v1/config. It
// returns the server's URI and the function that stops it.
func startRESTServer(dir, warehouse string) (string, func(), error) {
	cp, err := os.ReadFile(filepath.Join(restDir, "target", "classpath.txt"))
	if err != nil {
		return "", nil, fmt.Errorf("%w: %w", errRESTNotSetUp, err)
	}
	var errs []error
	// The port is free when picked but may be taken before the server
	// binds it: try a few.
	for range 3 {
		port, err := freePort()
		if err != nil {
			return "", nil, err
		}
		uri, stop, err := startRESTServerOn(dir, warehouse, strings.TrimSpace(string(cp)), port)
		if err == nil {
			return uri, stop, nil
		}
		errs = append(errs, err)
	}
	return "", nil, errors.Join(errs...)
}

// startRESTServerOn starts the server on port and waits until it answers.
func startRESTServerOn(dir, warehouse, classpath string, port int) (string, func(), error) {
	java := "java"
	if h := os.Getenv("JAVA_HOME"); h != "" {
		java = filepath.Join(h, "bin", "java")
	}
	cmd := exec.Command(java, "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-cp", classpath, "org.apache.iceberg.rest.RESTCatalogServer")
	// RCKUtils.environmentCatalogConfig maps CATALOG_* to catalog
	// properties: "__" to "-", "_" to ".", lower case.
	cmd.Env = append(os.Environ(),
		"CATALOG_CATALOG__IMPL=org.apache.iceberg.jdbc.JdbcCatalog",
		"CATALOG_URI=jdbc:sqlite:"+filepath.Join(dir, "rest-catalog.db"),
		"CATALOG_JDBC_SCHEMA__VERSION=V1",
		"CATALOG_WAREHOUSE="+warehouse,
		"CATALOG_IO__IMPL=org.apache.iceberg.hadoop.HadoopFileIO",
		fmt.Sprintf("CATALOG_REST_PORT=%d", port),
	)
	logs := &sparkdriver.Tail{Max: 64 << 10}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("interop: start the REST catalog server: %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}
	uri := fmt.Sprintf("http://127.0.0.1:%d", port)
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := client.Get(uri + "/v1/config")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return uri, stop, nil
			}
			err = fmt.Errorf("GET /v1/config: %s", resp.Status)
		}
		select {
		case <-exited:
			return "", nil, fmt.Errorf("interop: the REST catalog server on port %d exited (%v); its output ends:\n%s", port, cmd.ProcessState, logs)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("interop: the REST catalog server on port %d did not answer within 2m (%w); its output ends:\n%s", port, err, logs)
		}
	}
}

// freePort is a loopback TCP port that nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("interop: pick a port for the REST catalog server: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
