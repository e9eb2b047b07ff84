#pragma once

// A throwaway TLS certificate for 127.0.0.1 (a P-256 key, self-signed, valid for a day, the address
// as its subjectAltName), made with OpenSSL 3's API, for tests whose fake server speaks https: the
// client under test is given the certificate as its CA. A test links OpenSSL::Crypto.

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

namespace yolotrain::test {

struct PemPair {
  std::string key;   ///< PKCS#8 private key, PEM
  std::string cert;  ///< X.509 certificate, PEM
};

namespace tls_detail {

inline std::string pem_of(const std::function<int(BIO*)>& write) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), &BIO_free);
  if (!bio || write(bio.get()) != 1) throw std::runtime_error("self_signed_cert: PEM write failed");
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(n));
}

}  // namespace tls_detail

inline PemPair self_signed_cert_for_loopback() {
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_EC_gen("P-256"), &EVP_PKEY_free);
  std::unique_ptr<X509, decltype(&X509_free)> x509(X509_new(), &X509_free);
  if (!key || !x509) throw std::runtime_error("self_signed_cert: key or certificate not made");
  X509* c = x509.get();
  X509_set_version(c, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(c), 1);
  X509_gmtime_adj(X509_getm_notBefore(c), -60);
  X509_gmtime_adj(X509_getm_notAfter(c), 24 * 3600);
  X509_set_pubkey(c, key.get());
  X509_NAME* name = X509_get_subject_name(c);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("127.0.0.1"), -1, -1, 0);
  X509_set_issuer_name(c, name);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, c, c, nullptr, nullptr, 0);
  for (const auto& [nid, value] : {std::pair<int, const char*>{NID_subject_alt_name, "IP:127.0.0.1"},
                                   {NID_basic_constraints, "critical,CA:TRUE"}}) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    if (ext == nullptr) throw std::runtime_error("self_signed_cert: extension not made");
    X509_add_ext(c, ext, -1);
    X509_EXTENSION_free(ext);
  }
  if (X509_sign(c, key.get(), EVP_sha256()) == 0) throw std::runtime_error("self_signed_cert: signing failed");
  return {tls_detail::pem_of([&](BIO* b) { return PEM_write_bio_PrivateKey(b, key.get(), nullptr, nullptr, 0, nullptr,
                                                                           nullptr); }),
          tls_detail::pem_of([&](BIO* b) { return PEM_write_bio_X509(b, c); })};
}

}  // namespace yolotrain::test
