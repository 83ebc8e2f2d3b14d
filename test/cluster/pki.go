package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/ebbflow/ebbflow/test/certs"
	"github.com/ebbflow/ebbflow/test/proc"
)

// Names fixed by the aggregation setup.
const (
	adapterNamespace  = "ebbflow-system"
	adapterService    = "ebbflow-adapter"
	adapterUser       = "ebbflow-adapter"
	frontProxyClient  = "front-proxy-client"
	controllerMgrUser = "system:kube-controller-manager"
	// kubeletAPIClient is kube-apiserver's user towards kubelets, bound to
	// system:kubelet-api-admin.
	kubeletAPIClient = "kube-apiserver-kubelet-client"
)

// pki holds the cluster's certificate authorities and the files written from
// them under <dir>/pki.
type pki struct {
	dir          string
	clusterCA    *certs.Authority // client and kube-apiserver serving certificates
	frontProxyCA *certs.Authority // only the aggregator's proxy client certificate
	adapterCA    *certs.Authority // only the adapter's serving certificate

	caFile, frontProxyCAFile     string
	apiserverCert, apiserverKey  string
	proxyClientCert, proxyClient string // cert and key
	saKey, saPub                 string
	adapterCert, adapterKey      string
	// kube-apiserver's client certificate to kubelets (logs, exec, proxy).
	kubeletClientCert, kubeletClientKey string
	admin                               certs.KeyPair
}

// generatePKI creates the CAs, certificates, service account keys and the
// admin, controller-manager and adapter kubeconfigs.
func (c *Cluster) generatePKI(_ context.Context) error {
	ps, err := proc.FreePorts(5)
	if err != nil {
		return err
	}
	c.ports = ports{etcd: ps[0], etcdPeer: ps[1], apiserver: ps[2], controllerMgr: ps[3], adapter: ps[4]}
	p := &pki{dir: filepath.Join(c.dir, "pki")}
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return fmt.Errorf("create pki directory: %w", err)
	}
	if p.clusterCA, err = certs.NewAuthority("ebbflow-cluster-ca"); err != nil {
		return err
	}
	if p.frontProxyCA, err = certs.NewAuthority("ebbflow-front-proxy-ca"); err != nil {
		return err
	}
	if p.adapterCA, err = certs.NewAuthority("ebbflow-adapter-ca"); err != nil {
		return err
	}
	p.caFile = filepath.Join(p.dir, "ca.crt")
	p.frontProxyCAFile = filepath.Join(p.dir, "front-proxy-ca.crt")
	for path, data := range map[string][]byte{p.caFile: p.clusterCA.CertPEM, p.frontProxyCAFile: p.frontProxyCA.CertPEM} {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}

	leaves := []struct {
		ca         *certs.Authority
		spec       certs.Spec
		name       string
		cert, key  *string
		keepAsPair *certs.KeyPair
	}{
		{p.clusterCA, certs.Spec{CommonName: "kube-apiserver", Server: true, IPs: append(certs.LoopbackIPs(), net.ParseIP(kubernetesServiceIP), net.ParseIP(podGateway)),
			DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}},
			"apiserver", &p.apiserverCert, &p.apiserverKey, nil},
		{p.frontProxyCA, certs.Spec{CommonName: frontProxyClient}, "front-proxy-client", &p.proxyClientCert, &p.proxyClient, nil},
		{p.adapterCA, certs.Spec{CommonName: adapterService, Server: true, IPs: certs.LoopbackIPs(),
			DNSNames: []string{adapterService + "." + adapterNamespace + ".svc", "localhost"}},
			"adapter-serving", &p.adapterCert, &p.adapterKey, nil},
		{p.clusterCA, certs.Spec{CommonName: "kubernetes-admin", Orgs: []string{"system:masters"}}, "admin", nil, nil, &p.admin},
		{p.clusterCA, certs.Spec{CommonName: kubeletAPIClient},
			"apiserver-kubelet-client", &p.kubeletClientCert, &p.kubeletClientKey, nil},
	}
	for _, l := range leaves {
		pair, err := l.ca.Issue(l.spec)
		if err != nil {
			return err
		}
		certPath, keyPath, err := pair.Write(p.dir, l.name)
		if err != nil {
			return err
		}
		if l.cert != nil {
			*l.cert, *l.key = certPath, keyPath
		}
		if l.keepAsPair != nil {
			*l.keepAsPair = pair
		}
	}
	saKey, saPub, err := certs.NewSigningKey()
	if err != nil {
		return err
	}
	p.saKey, p.saPub = filepath.Join(p.dir, "sa.key"), filepath.Join(p.dir, "sa.pub")
	if err := os.WriteFile(p.saKey, saKey, 0o600); err != nil {
		return fmt.Errorf("write service account key: %w", err)
	}
	if err := os.WriteFile(p.saPub, saPub, 0o644); err != nil {
		return fmt.Errorf("write service account public key: %w", err)
	}
	c.pki = p

	if c.adminKubeconfig, err = c.writeKubeconfig("admin", p.admin); err != nil {
		return err
	}
	c.restConfig = &rest.Config{
		Host:            c.apiserverURL(),
		TLSClientConfig: rest.TLSClientConfig{CAData: p.clusterCA.CertPEM, CertData: p.admin.CertPEM, KeyData: p.admin.KeyPEM},
		QPS:             100,
		Burst:           200,
	}
	if c.client, err = kubernetes.NewForConfig(c.restConfig); err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	return nil
}

func (c *Cluster) apiserverURL() string {
	return "https://" + net.JoinHostPort(c.APIServerHost(), strconv.Itoa(c.ports.apiserver))
}

// APIServerHost is the address kube-apiserver listens on: loopback, or with a
// real node the pod network's gateway (reachable from the host and from pods;
// never the machine's outside interface).
func (c *Cluster) APIServerHost() string {
	if c.opts.RealNode {
		return podGateway
	}
	return "127.0.0.1"
}

// userNamePattern keeps user names usable as file names.
var userNamePattern = regexp.MustCompile(`^[A-Za-z0-9:._@-]+$`)

// KubeconfigFor issues a client certificate for user (CN) with groups (O)
// from the cluster CA and returns the path of a kubeconfig using it. The user
// has no permissions beyond what RBAC grants to the name, its groups and
// system:authenticated.
func (c *Cluster) KubeconfigFor(user string, groups ...string) (string, error) {
	if !userNamePattern.MatchString(user) {
		return "", fmt.Errorf("user name %q: only letters, digits and :._@- allowed", user)
	}
	pair, err := c.pki.clusterCA.Issue(certs.Spec{CommonName: user, Orgs: groups})
	if err != nil {
		return "", err
	}
	return c.writeKubeconfig("user-"+user, pair)
}

// writeKubeconfig writes <dir>/kubeconfigs/<name>.kubeconfig for the client
// pair against kube-apiserver and returns its path.
func (c *Cluster) writeKubeconfig(name string, pair certs.KeyPair) (string, error) {
	dir := filepath.Join(c.dir, "kubeconfigs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create kubeconfig directory: %w", err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: c.apiserverURL(), CertificateAuthorityData: c.pki.clusterCA.CertPEM}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: pair.CertPEM, ClientKeyData: pair.KeyPEM}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: name}
	cfg.CurrentContext = "local"
	path := filepath.Join(dir, name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return path, nil
}
