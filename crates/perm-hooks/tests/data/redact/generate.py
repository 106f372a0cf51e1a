#!/usr/bin/env python3
"""Writes the redaction corpus: made-up secrets in real shapes, and ordinary project files.

Every secret here is random output of this script (seeded, so reruns are stable), never a real
credential. `secrets/*` files hold secrets; `secrets.json` lists, per file, each secret string
and the detector that must mask it. `ordinary/*` files hold none and must pass untouched.
Run from this directory: python3 generate.py
"""
import base64
import json
import os
import random
import string
import uuid

R = random.Random(20261203)
ALNUM = string.ascii_letters + string.digits
UPPER32 = string.ascii_uppercase + "234567"


def rand(n, alphabet=ALNUM):
    return "".join(R.choice(alphabet) for _ in range(n))


def b64(nbytes):
    return base64.b64encode(bytes(R.randrange(256) for _ in range(nbytes))).decode()


def b64url(data):
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def hexs(n):
    return rand(n, "0123456789abcdef")


def jwt(alg="RS256"):
    header = b64url(json.dumps({"alg": alg, "typ": "JWT", "kid": rand(8)}).encode())
    payload = b64url(json.dumps({"sub": str(uuid.UUID(int=R.getrandbits(128))), "iat": 1764720000}).encode())
    return f"{header}.{payload}.{b64url(bytes(R.randrange(256) for _ in range(64)))}"


def pem(kind, nlines=12):
    body = base64.b64encode(bytes(R.randrange(256) for _ in range(48 * nlines))).decode()
    lines = [body[i:i + 64] for i in range(0, len(body), 64)]
    label = f"{kind} PRIVATE KEY" if kind else "PRIVATE KEY"
    return f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----\n", "\n".join(lines)


secrets = {}


def secret_file(name, text, found):
    """found: list of (detector, secret string)."""
    secrets[name] = [{"detector": d, "secret": s} for d, s in found]
    with open(os.path.join("secrets", name), "w") as f:
        f.write(text)


def ordinary_file(name, text):
    with open(os.path.join("ordinary", name), "w") as f:
        f.write(text)


os.makedirs("secrets", exist_ok=True)
os.makedirs("ordinary", exist_ok=True)

# ---------------------------------------------------------------- secrets
db_pw, redis_pw = rand(20), rand(16)
secret_key = rand(50, ALNUM + "!@#%^&*(-_=+)")
stripe = "sk_live_" + rand(99)
sendgrid = "SG." + rand(22, ALNUM + "_-") + "." + rand(43, ALNUM + "_-")
aws_id = "AKIA" + rand(16, UPPER32)
aws_secret = b64(30)
openai = "sk-proj-" + rand(156, ALNUM + "_-")
anthropic = "sk-ant-api03-" + rand(93, ALNUM + "_-") + "AA"
ghp = "ghp_" + rand(36)
glpat = "glpat-" + rand(20, ALNUM + "_-")
slack = f"xoxb-{R.randrange(10**11, 10**12)}-{R.randrange(10**12, 10**13)}-{rand(24)}"
webhook_path = f"T{rand(10, UPPER32)}/B{rand(10, UPPER32)}/{rand(24)}"
npm = "npm_" + rand(36)
hf = "hf_" + rand(34)
gkey = "AIza" + rand(35, ALNUM + "_-")
jwt_secret = b64(48)
secret_file(".env.production", f"""# production settings - do not commit
NODE_ENV=production
PORT=8080
DATABASE_URL=postgres://app_user:{db_pw}@db.prod.internal:5432/app
REDIS_URL=redis://:{redis_pw}@cache.prod.internal:6379/0
SECRET_KEY="{secret_key}"
STRIPE_SECRET_KEY={stripe}
SENDGRID_API_KEY={sendgrid}
AWS_ACCESS_KEY_ID={aws_id}
AWS_SECRET_ACCESS_KEY={aws_secret}
AWS_REGION=eu-west-1
OPENAI_API_KEY={openai}
ANTHROPIC_API_KEY={anthropic}
GITHUB_TOKEN={ghp}
GITLAB_TOKEN={glpat}
SLACK_BOT_TOKEN={slack}
SLACK_WEBHOOK_URL=https://hooks.slack.com/services/{webhook_path}
NPM_TOKEN={npm}
HF_TOKEN={hf}
GOOGLE_MAPS_API_KEY={gkey}
JWT_SECRET={jwt_secret}
LOG_LEVEL=info
""", [("url-password", db_pw), ("url-password", redis_pw), ("secret-assignment", secret_key),
      ("stripe-key", stripe), ("sendgrid-key", sendgrid), ("aws-access-key-id", aws_id),
      ("secret-assignment", aws_secret), ("openai-key", openai), ("anthropic-key", anthropic),
      ("github-token", ghp), ("gitlab-token", glpat), ("slack-token", slack),
      ("slack-webhook", webhook_path), ("npm-token", npm), ("huggingface-token", hf),
      ("google-api-key", gkey), ("secret-assignment", jwt_secret)])

key_pem, key_body = pem("", 26)
key_json = key_pem.replace("\n", "\\n")
body_json = key_body.replace("\n", "\\n")
key_id = hexs(40)
secret_file("service-account.json", json.dumps({
    "type": "service_account",
    "project_id": "demo-project-41523",
    "private_key_id": key_id,
    "private_key": key_pem,
    "client_email": "deployer@demo-project-41523.iam.gserviceaccount.com",
    "client_id": str(R.randrange(10**20, 10**21)),
    "auth_uri": "https://accounts.google.com/o/oauth2/auth",
    "token_uri": "https://oauth2.googleapis.com/token",
}, indent=2) + "\n", [("private-key", body_json)])

rsa_pem, rsa_body = pem("RSA", 25)
secret_file("id_rsa", rsa_pem, [("private-key", rsa_body)])
ossh_pem, ossh_body = pem("OPENSSH", 7)
secret_file("id_ed25519", ossh_pem, [("private-key", ossh_body)])
ec_pem, ec_body = pem("EC", 3)
secret_file("tls-bundle.pem", "-----BEGIN CERTIFICATE-----\n" + b64(45) + "\n-----END CERTIFICATE-----\n" + ec_pem,
            [("private-key", ec_body)])

ghs = "ghs_" + rand(36)
bearer = rand(40, ALNUM + "-._")
bearer = bearer[:10] + "7" + bearer[11:]
secret_file("shell-session.txt", f"""$ git remote -v
origin  https://x-access-token:{ghs}@github.com/acme/api.git (fetch)
origin  https://x-access-token:{ghs}@github.com/acme/api.git (push)
$ curl -sS -H "Authorization: Bearer {bearer}" https://api.acme.test/v1/me
{{"id": 42, "name": "deploy-bot"}}
$ git log -1 --format=%H
{hexs(40)}
""", [("github-token", ghs), ("bearer-token", bearer)])

npm2 = "npm_" + rand(36)
secret_file(".npmrc", f"registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken={npm2}\nsave-exact=true\n",
            [("npm-token", npm2)])

pypi = "pypi-AgEIcHlwaS5vcmc" + rand(150, ALNUM + "_-")
secret_file(".pypirc", f"[distutils]\nindex-servers = pypi\n\n[pypi]\nusername = __token__\npassword = {pypi}\n",
            [("pypi-token", pypi)])

sa_jwt = jwt("RS256")
secret_file("kubeconfig.yaml", f"""apiVersion: v1
kind: Config
clusters:
- cluster:
    server: https://10.0.0.1:6443
  name: prod
users:
- name: ci
  user:
    token: {sa_jwt}
contexts:
- context: {{cluster: prod, user: ci}}
  name: prod
current-context: prod
""", [("jwt", sa_jwt)])

spring_pw, client_secret, azure = rand(18, ALNUM + "!#%"), rand(34, ALNUM + "~._-"), b64(64)
spring_pw = spring_pw[:3] + "9" + spring_pw[4:]
secret_file("application.yml", f"""spring:
  datasource:
    url: jdbc:postgresql://db:5432/orders
    username: orders
    password: {spring_pw}
security:
  oauth2:
    client:
      registration:
        azure:
          client-id: {uuid.UUID(int=R.getrandbits(128))}
          client-secret: "{client_secret}"
storage:
  connection-string: "DefaultEndpointsProtocol=https;AccountName=ordersprod;AccountKey={azure};EndpointSuffix=core.windows.net"
""", [("secret-assignment", spring_pw), ("secret-assignment", client_secret), ("azure-storage-key", azure)])

py_key, js_pw, tf_secret = rand(32, "0123456789abcdef"), rand(14, ALNUM + "!$"), rand(40, ALNUM + "~_")
js_pw = js_pw[:5] + "3" + js_pw[6:]
secret_file("hardcoded.py", f'''import requests

API_KEY = "{py_key}"  # TODO move to the vault


def fetch(path):
    return requests.get(f"https://api.acme.test{{path}}", headers={{"X-Api-Key": API_KEY}})
''', [("secret-assignment", py_key)])
secret_file("db.js", f'''const {{ Pool }} = require("pg");

const pool = new Pool({{
  host: "db.internal",
  user: "reporting",
  password: "{js_pw}",
  database: "reports",
}});
module.exports = pool;
''', [("secret-assignment", js_pw)])
secret_file("terraform.tfvars", f'''subscription_id = "{uuid.UUID(int=R.getrandbits(128))}"
client_id       = "{uuid.UUID(int=R.getrandbits(128))}"
client_secret   = "{tf_secret}"
location        = "westeurope"
''', [("secret-assignment", tf_secret)])

hs_jwt = jwt("HS256")
gho = "gho_" + rand(36)
secret_file("app.log", f"""2026-12-03T05:12:44Z INFO  request id={uuid.UUID(int=R.getrandbits(128))} path=/api/v1/orders status=200
2026-12-03T05:12:45Z DEBUG set-cookie: session={hs_jwt}; Path=/; HttpOnly
2026-12-03T05:12:46Z WARN  oauth refresh for user 1842 returned access_token={gho}
2026-12-03T05:12:47Z INFO  cache hit ratio=0.93 keys=18234
""", [("jwt", hs_jwt), ("github-token", gho)])

netrc_pw = rand(24)
basic = base64.b64encode(f"deploy:{rand(18)}".encode()).decode()
vault = "hvs." + rand(90, ALNUM + "_-")
vault = vault[:8] + "4" + vault[9:]
shop = "shpat_" + hexs(32)
dop = "dop_v1_" + hexs(64)
age = "AGE-SECRET-KEY-1" + rand(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L")
gocspx = "GOCSPX-" + rand(28, ALNUM + "_-")
dckr = "dckr_pat_" + rand(27, ALNUM + "_-")
secret_file("misc-credentials.txt", f"""$ cat ~/.netrc
machine git.acme.test login ci password {netrc_pw}
$ curl -v https://registry.acme.test/v2/
> Authorization: Basic {basic}
$ env | grep -E 'VAULT|SHOP|DO_'
VAULT_ADDR=https://vault.acme.test:8200
VAULT_TOKEN={vault}
SHOPIFY_ADMIN={shop}
DO_API={dop}
$ cat key.txt
# created: 2026-12-01T10:00:00Z
# public key: age1{rand(58, "qpzry9x8gf2tvdw0s3jn54khce6mua7l")}
{age}
$ jq .installed.client_secret client.json
"{gocspx}"
$ cat ~/.docker/token
{dckr}
""", [("netrc-password", netrc_pw), ("basic-auth", basic), ("vault-token", vault), ("shopify-token", shop),
      ("digitalocean-token", dop), ("age-secret-key", age), ("google-oauth-client-secret", gocspx),
      ("docker-hub-token", dckr)])

tls_pem, _ = pem("RSA", 10)
tls_b64 = base64.b64encode(tls_pem.encode()).decode()
crt_b64 = base64.b64encode(("-----BEGIN CERTIFICATE-----\n" + b64(48) + "\n-----END CERTIFICATE-----\n").encode()).decode()
k8s_pw = base64.b64encode(rand(20).encode()).decode()
secret_file("k8s-secret.yaml", f"""apiVersion: v1
kind: Secret
metadata:
  name: web-tls
type: kubernetes.io/tls
data:
  tls.crt: {crt_b64}
  tls.key: {tls_b64}
  db-password: {k8s_pw}
""", [("private-key-base64", tls_b64), ("secret-assignment", k8s_pw)])

csv_id, csv_secret = "AKIA" + rand(16, UPPER32), b64(30)
secret_file("credentials.csv", f"""User name,Password,Access key ID,Secret access key,Console login link
ci-deployer,,{csv_id},{csv_secret},https://123456789012.signin.aws.amazon.com/console
""", [("aws-access-key-id", csv_id), ("aws-secret-access-key", csv_secret)])

with open("secrets.json", "w") as f:
    json.dump(secrets, f, indent=2, sort_keys=True)
    f.write("\n")

# ---------------------------------------------------------------- ordinary
ordinary_file("Cargo.toml", """[package]
name = "tokenizer-cli"
version = "0.3.1"
edition = "2021"
authors = ["Ada Lovelace <ada@example.com>", "Alan Turing <alan@example.org>"]
description = "Tokenize text with HF tokenizers; secrets never leave the keyring"
keywords = ["tokenizer", "auth", "token", "nlp"]
license = "MIT OR Apache-2.0"

[dependencies]
tokenizers = "0.19"
jsonwebtoken = "9"
secrecy = { version = "0.8", features = ["serde"] }
keyring = "3"
oauth2 = "4.4"
password-hash = "0.5"
argon2 = "0.5"
token-bucket = "0.1"

[dev-dependencies]
tempfile = "3"
""")

lock = ["# This file is automatically @generated by Cargo.\n# It is not intended for manual editing.\nversion = 4\n"]
for name in ["aho-corasick", "argon2", "base64", "jsonwebtoken", "keyring", "oauth2", "password-hash", "secrecy",
             "serde", "tokenizers", "token-bucket", "zeroize"]:
    lock.append(f'''
[[package]]
name = "{name}"
version = "{R.randrange(0, 5)}.{R.randrange(0, 30)}.{R.randrange(0, 20)}"
source = "registry+https://github.com/rust-lang/crates.io-index"
checksum = "{hexs(64)}"
dependencies = [
 "serde",
]
''')
ordinary_file("Cargo.lock", "".join(lock))

ordinary_file("package.json", json.dumps({
    "name": "auth-service",
    "version": "2.4.0",
    "private": True,
    "scripts": {"start": "node src/index.js", "test": "jest --coverage", "lint": "eslint ."},
    "dependencies": {"bcrypt": "^5.1.1", "dotenv": "^16.4.5", "express": "^4.19.2",
                     "jsonwebtoken": "^9.0.2", "passport": "^0.7.0", "passport-jwt": "^4.0.1",
                     "passport-http-bearer": "^1.0.1", "csrf-token": "^1.0.0"},
    "devDependencies": {"jest": "^29.7.0", "eslint": "^9.0.0"},
}, indent=2) + "\n")

packages = {"": {"name": "auth-service", "version": "2.4.0"}}
for name in ["bcrypt", "dotenv", "express", "jsonwebtoken", "passport", "passport-jwt", "safe-buffer", "ms"]:
    v = f"{R.randrange(1, 17)}.{R.randrange(0, 20)}.{R.randrange(0, 10)}"
    packages[f"node_modules/{name}"] = {
        "version": v,
        "resolved": f"https://registry.npmjs.org/{name}/-/{name}-{v}.tgz",
        "integrity": "sha512-" + b64(64),
        "license": "MIT",
    }
ordinary_file("package-lock.json", json.dumps({"name": "auth-service", "version": "2.4.0", "lockfileVersion": 3,
                                               "requires": True, "packages": packages}, indent=2) + "\n")

ordinary_file("requirements.txt", "".join(
    f"{n}=={v} \\\n    --hash=sha256:{hexs(64)} \\\n    --hash=sha256:{hexs(64)}\n"
    for n, v in [("django", "5.1.4"), ("djangorestframework-simplejwt", "5.3.1"), ("pyjwt", "2.10.1"),
                 ("keyring", "25.5.0"), ("tokenizers", "0.21.0"), ("passlib", "1.7.4")]))

ordinary_file("poetry.lock", "".join(f'''[[package]]
name = "{n}"
version = "{R.randrange(0, 9)}.{R.randrange(0, 20)}.{R.randrange(0, 9)}"
description = "{d}"
optional = false
python-versions = ">=3.9"
files = [
    {{file = "{n}-1.0.0-py3-none-any.whl", hash = "sha256:{hexs(64)}"}},
]

''' for n, d in [("authlib", "The ultimate Python library in building OAuth and OpenID Connect servers."),
                 ("secretstorage", "Python bindings to FreeDesktop.org Secret Service API"),
                 ("python-dotenv", "Read key-value pairs from a .env file")]) + f'''[metadata]
lock-version = "2.0"
python-versions = "^3.11"
content-hash = "{hexs(64)}"
''')

ordinary_file("pyproject.toml", """[project]
name = "token-counter"
version = "1.2.0"
authors = [{ name = "Grace Hopper", email = "grace@example.com" }]
dependencies = ["tiktoken>=0.7", "keyring>=25", "pyjwt[crypto]>=2.8"]

[tool.pytest.ini_options]
addopts = "-q"
""")

ordinary_file("go.mod", """module github.com/acme/authz

go 1.23

require (
\tgithub.com/golang-jwt/jwt/v5 v5.2.1
\tgolang.org/x/crypto v0.31.0
\tgolang.org/x/oauth2 v0.24.0
)
""")
ordinary_file("go.sum", "".join(
    f"{m} {v} h1:{b64(32)}\n{m} {v}/go.mod h1:{b64(32)}\n"
    for m, v in [("github.com/golang-jwt/jwt/v5", "v5.2.1"), ("golang.org/x/crypto", "v0.31.0"),
                 ("golang.org/x/oauth2", "v0.24.0")]))

ordinary_file("README.md", """# auth-service

Issues and verifies session tokens for the shop. Passwords are hashed with argon2; the signing
secret comes from the environment, never from the repository.

## Running locally

```sh
cp .env.example .env          # then fill in your own values
docker compose up -d db
export DATABASE_URL=postgres://postgres:postgres@localhost:5432/dev
export API_KEY=<your-api-key>
cargo run -- --listen 127.0.0.1:8080
```

Connect with `psql postgres://user:password@localhost/dev` or, for Redis,
`redis://localhost:6379/0`. Clone over SSH with `git clone git@github.com:acme/auth-service.git`.

## Configuration

| variable | meaning |
|---|---|
| `JWT_SECRET` | HMAC key for session tokens (32+ random bytes) |
| `GITHUB_TOKEN` | a personal access token (classic tokens start with `ghp_`) |
| `TOKEN_TTL` | token lifetime in seconds, default 3600 |
| `PASSWORD_MIN_LENGTH` | default 12 |

Tokens look like `eyJhbGciOi...`: header, payload and signature, base64url, joined by dots.
The bearer scheme is used: `Authorization: Bearer <token>`.
""")

ordinary_file(".env.example", """# copy to .env and fill in
DATABASE_URL=postgres://user:password@localhost:5432/app
SECRET_KEY=changeme
API_KEY=your-api-key-here
STRIPE_SECRET_KEY=sk_live_...
GITHUB_TOKEN=
JWT_SECRET=${JWT_SECRET}
SMTP_PASSWORD=<smtp password>
AWS_SECRET_ACCESS_KEY=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
TOKEN_TTL=3600
""")

ordinary_file("lexer.rs", """//! A small lexer: the token stream for the parser.

use crate::token::{Token, TokenKind};

pub struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    peeked: Option<Token>,
}

impl<'a> Lexer<'a> {
    pub fn next_token(&mut self) -> Token {
        if let Some(token) = self.peeked.take() {
            return token;
        }
        let token = self.scan();
        token
    }

    fn parse_key_value(&mut self) -> Result<(String, String), Error> {
        let key = self.expect_ident()?;
        let token = self.next_token();
        let secret_len = self.src.len() - self.pos;
        let password: &str = "";
        match token.kind {
            TokenKind::Eq => Ok((key, self.rest(secret_len))),
            _ => Err(Error::Unexpected { token, password_hint: password.len() }),
        }
    }
}

fn auth_header(token: &str) -> String {
    format!("Bearer {token}")
}

#[test]
fn lexes_an_assignment() {
    let mut lexer = Lexer::new("api_key = value");
    let token = lexer.next_token();
    assert_eq!(token.kind, TokenKind::Ident);
}
""")

ordinary_file("auth.py", '''"""Login views."""
import os

from django import forms
from django.contrib.auth.hashers import check_password

SECRET_KEY = os.environ["SECRET_KEY"]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.Argon2PasswordHasher"]


class LoginForm(forms.Form):
    username = forms.CharField(max_length=150)
    password_field = forms.CharField(widget=forms.PasswordInput)
    password = forms.CharField(label="Password", widget=forms.PasswordInput)


def auth_handler(request):
    password = request.POST["password"]
    user = User.objects.get(username=request.POST["username"])
    if not check_password(password, user.password_hash):
        return HttpResponse(status=401)
    token = generate_token(user)
    api_key = settings.API_KEY
    secret = get_secret("jwt")
    return JsonResponse({"token": token, "token_type": "bearer", "expires_in": 3600})


def reset_password(request, token=None):
    new_password = request.POST.get("new_password", "")
    password_confirm = request.POST.get("password_confirm")
    return render(request, "reset.html", {"token": token, "password_min_length": 12})
''')

ordinary_file("auth.ts", '''import jwt from "jsonwebtoken";

interface Credentials {
  username: string;
  password: string;
}

const secret = process.env.JWT_SECRET ?? "";
const apiKey: string | undefined = process.env.API_KEY;

export function authMiddleware(req: Request, res: Response, next: NextFunction) {
  const token = req.headers.authorization?.split(" ")[1];
  if (!token) return res.status(401).json({ error: "missing token" });
  const payload = jwt.verify(token, secret);
  const accessToken = createAccessToken(payload);
  const refreshToken = createRefreshToken(payload);
  res.locals.auth = { accessToken, refreshToken, tokenType: "Bearer" };
  next();
}

export const passwordPolicy = { minLength: 12, requireDigit: true };
const form = { password: credentials.password, token: csrfToken };
''')

ordinary_file("server.go", '''package authz

import (
\t"net/http"
\t"os"
)

type Login struct {
\tUsername string `json:"username"`
\tPassword string `json:"password"`
}

func (s *Server) authMiddleware(next http.Handler) http.Handler {
\treturn http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
\t\ttoken := r.Header.Get("Authorization")
\t\tsecret := os.Getenv("JWT_SECRET")
\t\tapiKey := r.URL.Query().Get("api_key")
\t\tif !s.verify(token, secret, apiKey) {
\t\t\thttp.Error(w, "invalid token", http.StatusUnauthorized)
\t\t\treturn
\t\t}
\t\tnext.ServeHTTP(w, r)
\t})
}
''')

ordinary_file("UserService.java", '''package com.acme.users;

public class UserService {
    private final PasswordEncoder passwordEncoder;
    private String password;
    private String apiKey;

    public void setPassword(String password) {
        this.password = passwordEncoder.encode(password);
    }

    public boolean authenticate(String username, String password) {
        String token = tokenService.issue(username);
        return token != null && passwordEncoder.matches(password, this.password);
    }
}
''')

ordinary_file("ci.yml", """name: ci
on: [push]
jobs:
  test:
    runs-on: ubuntu-latest
    env:
      GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}
      NPM_TOKEN: ${{ secrets.NPM_TOKEN }}
      DATABASE_URL: postgres://postgres:postgres@localhost:5432/test
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-node@v4
        with:
          token: ${{ secrets.GH_PAT }}
      - run: npm ci && npm test
""")

ordinary_file("docker-compose.yml", """services:
  db:
    image: postgres:16
    environment:
      POSTGRES_USER: postgres
      POSTGRES_PASSWORD: postgres
      POSTGRES_DB: dev
  app:
    build: .
    environment:
      - DATABASE_URL=postgres://postgres:postgres@db:5432/dev
      - SECRET_KEY_FILE=/run/secrets/secret_key
    secrets:
      - secret_key
secrets:
  secret_key:
    file: ./secret_key.txt
""")

ordinary_file("deployment.yaml", """apiVersion: apps/v1
kind: Deployment
metadata:
  name: auth
spec:
  template:
    spec:
      containers:
        - name: auth
          image: ghcr.io/acme/auth@sha256:""" + hexs(64) + """
          env:
            - name: JWT_SECRET
              valueFrom:
                secretKeyRef:
                  name: auth-secrets
                  key: jwt-secret
""")

ordinary_file("git-log.txt", "".join(
    f"commit {hexs(40)}\nAuthor: Dev {i} <dev{i}@example.com>\nDate:   Wed Dec 2 1{i}:00:00 2026 +0000\n\n"
    f"    auth: rotate token signing keys ({hexs(7)})\n    Change-Id: I{hexs(40)}\n\n" for i in range(5)))

ordinary_file("ids.csv", "id,session_token_id,request_id\n" + "".join(
    f"{i},{uuid.UUID(int=R.getrandbits(128))},{uuid.UUID(int=R.getrandbits(128))}\n" for i in range(10)))

ordinary_file("logo.html", f"""<!doctype html>
<html><body>
<form method="post"><input type="password" name="password" autocomplete="current-password">
<input type="hidden" name="csrf_token" value="{{{{ csrf_token }}}}"></form>
<img alt="logo" src="data:image/png;base64,{b64(600)}">
</body></html>
""")

ordinary_file("sha256sums.txt", "".join(f"{hexs(64)}  auth-service-2.4.0-{a}.tar.gz\n" for a in ["x86_64", "aarch64", "riscv64"]))

# One-liners from many ecosystems that name secrets without holding one.
ordinary_file("snippets.txt", r"""[tool.poetry.dependencies]
python = "^3.11"
keyring = "^24.0"
"@octokit/auth-token": "^4.0.0",
"node_modules/js-tokens": { "version": "4.0.0", "integrity": "sha512-RdJUflcE3cUzKiMqQgsCu06FA7a85EgvhJF6cVQwjcDDgA3I9kIzjiQDCdM+Sy3R7KCkgt5ZNa5LHKv6zLeNQw==" },
resolved "https://registry.yarnpkg.com/js-tokens/-/js-tokens-4.0.0.tgz#19203fb59991df98e3a287050d4647cdeaf32499"
github.com/golang-jwt/jwt/v5 v5.2.1 h1:OuVbFODueb089Lh128TAcimifWaLhJwVflnrgM17wHk=
  narHash = "sha256-+hOE2ZVu7CqTR1RjBEkmVw5cvJ1P7wiN9Ur0bZDHWCM=";
password_hash = bcrypt.hashpw(password.encode(), bcrypt.gensalt())
PASSWORD_MIN_LENGTH = 12
token_count = len(tokens)
auth_token = request.headers.get("X-Auth-Token")
secret = Secret(name="db", namespace=ns)
const [token, setToken] = useState<string | null>(null);
api_key: Optional[str] = None
def login(username: str, password: str) -> Token:
if (password !== confirmPassword) { setError("Passwords do not match"); }
export const API_KEY_HEADER = "X-Api-Key";
  - name: SECRET_KEY
    valueFrom: {secretKeyRef: {name: app, key: secret-key}}
session.secret = process.env.SESSION_SECRET || crypto.randomBytes(32).toString("hex");
git clone https://github.com/rust-lang/regex.git
curl -u "$USER:$PASSWORD" https://api.example.com
mysql -u root -p"$MYSQL_ROOT_PASSWORD"
docker login -u user --password-stdin
ssh-keygen -t ed25519 -C "you@example.com"
ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl you@example.com
Tokens are counted with tiktoken; the secret sauce is caching.
  "resolved": "https://registry.npmjs.org/@aws-sdk/credential-providers/-/credential-providers-3.0.0.tgz",
Set the `AWS_SECRET_ACCESS_KEY` and `AWS_ACCESS_KEY_ID` environment variables.
    password = models.CharField(max_length=128)
    token = serializers.CharField(read_only=True)
let secret_key = SecretKey::from_slice(&bytes)?;
KeyError: 'password'
Passwd file: /etc/passwd
passport.use(new JwtStrategy(opts, verify));
    "token_type": "Bearer",
    "expires_in": 3600,
redis://localhost:6379
postgresql://localhost/mydb?user=other&password=secret
http://user@example.com/
https://example.com:8443/path?q=1
commit 3f2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a
Change-Id: I8c2f1e0d9b8a7f6e5d4c3b2a19080706f5e4d3c2
uuid: 123e4567-e89b-12d3-a456-426614174000
<img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==">
password=$(cat /run/secrets/db_password)
TOKEN=$(gcloud auth print-access-token)
api_key = os.getenv("API_KEY", "")
  secretName: my-tls
  tokenizer: "bert-base-uncased"
API_TOKEN_TTL_SECONDS=3600
"password": "",
"password": null,
  password: ${DB_PASSWORD}
  password: "{{ vault_db_password }}"
  password: !vault |
  token: ${{ secrets.GITHUB_TOKEN }}
jwt_secret: <%= ENV["JWT_SECRET"] %>
PASSWORD_REGEX = r"^(?=.*[A-Z])(?=.*\d).{12,}$"
""")
