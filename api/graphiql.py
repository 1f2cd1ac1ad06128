"""GraphiQL (with the Explorer plugin) served from files on this machine, never from a CDN.

strawberry's own GraphiQL page loads React, GraphiQL, the Explorer and js-cookie from unpkg, so
without internet it shows "Loading..." for ever. Here the same pinned builds are fetched once,
by `palimpsest graphiql-assets` (part of `make install`), with `npm pack` from the npm registry
into the cache directory (PALIMPSEST_CACHE_DIR, beside the Neo4j jars); the app serves them under
ASSET_PREFIX and renders its own page around them.

Integrity, twice: each tarball must match the sha512 the registry published for it, and each
file taken out of it the sha384 that strawberry's page pins for the same file (the page repeats
it in `integrity=` attributes, so a file changed on disk afterwards is refused by the browser).

The page references only what it loads (no js-cookie: nothing here uses a CSRF cookie). When the
files are missing the server answers a page that says how to install them; if one fails to load
anyway, the page replaces "Loading..." with the same advice instead of hanging.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from palimpsest.graph.db.local_server import file_lock
from palimpsest.settings import Settings

ASSET_PREFIX = "/graphiql-assets"
INSTALL_HINT = "make install  (or: palimpsest graphiql-assets)"


@dataclass(frozen=True)
class AssetFile:
    """One file of an npm package, served under ASSET_PREFIX as `name`."""

    path: str  # inside the package
    name: str
    sri: str  # sha384, as in an `integrity` attribute


@dataclass(frozen=True)
class NpmPackage:
    name: str
    version: str
    integrity: str  # the registry's sha512 of the tarball
    files: tuple[AssetFile, ...]

    @property
    def spec(self) -> str:
        return f"{self.name}@{self.version}"


# The versions strawberry 0.341's page pins (GraphiQL 3 runs on React 18 and CodeMirror 5).
PACKAGES: tuple[NpmPackage, ...] = (
    NpmPackage("react", "18.2.0",
               "sha512-/3IjMdb2L9QbBdWiW5e3P2/npwMBaU9mHCSCUzNln0ZCYbcfTsGbTJrU/kGemdH2IWmB2ioZ+zkxtmq6g09fGQ==",
               (AssetFile("umd/react.production.min.js", "react.production.min.js",
                          "sha384-tMH8h3BGESGckSAVGZ82T9n90ztNXxvdwvdM6UoR56cYcf+0iGXBliJ29D+wZ/x8"),)),
    NpmPackage("react-dom", "18.2.0",
               "sha512-6IMTriUmvsjHUjNtEDudZfuDQUoWXVxKHhlEGSk81n4YFS+r/Kl99wXiwlVXtPBtJenozv2P+hxDsw9eA7Xo6g==",
               (AssetFile("umd/react-dom.production.min.js", "react-dom.production.min.js",
                          "sha384-bm7MnzvK++ykSwVJ2tynSE5TRdN+xL418osEVF2DE/L/gfWHj91J2Sphe582B1Bh"),)),
    NpmPackage("graphiql", "3.8.3",
               "sha512-cuPDYtXVKV86Pu5PHBX642Odi/uVEE2y1Jxq5rGO/Qy1G2lRp7ZZ7a/T30RzxhuLSWo9zUbzq0P3U49//H0Ugw==",
               (AssetFile("graphiql.min.js", "graphiql.min.js",
                          "sha384-HbRVEFG0JGJZeAHCJ9Xm2+tpknBQ7QZmNlO/DgZtkZ0aJSypT96YYGRNod99l9Ie"),
                AssetFile("graphiql.min.css", "graphiql.min.css",
                          "sha384-Mq3vbRBY71jfjQAt/DcjxUIYY33ksal4cgdRt9U/hNPvHBCaT2JfJ/PTRiPKf0aM"))),
    NpmPackage("@graphiql/plugin-explorer", "1.0.2",
               "sha512-9j+kg2UjtLZD5EBmGjeWHkoVVxtbShYg2DzbUVebibnZYZM/iMBEF4vaccXJIAm5KaomIPLx0aoNs4LbODyc3Q==",
               (AssetFile("dist/index.umd.js", "plugin-explorer.umd.js",
                          "sha384-2oonKe47vfHIZnmB6ZZ10vl7T0Y+qrHQF2cmNTaFDuPshpKqpUMGMc9jgj9MLDZ9"),
                AssetFile("dist/style.css", "plugin-explorer.css",
                          "sha384-5DFJlDPW2tSATRbM8kzoP1j194jexLswuNmClWoRr2Q0x7R68JIQzPHZ02Faktwi"))),
)
FILES: dict[str, AssetFile] = {f.name: f for p in PACKAGES for f in p.files}

def example_queries() -> list[str]:
    """docs/GRAPHQL.md's three queries, as GraphiQL's first tabs: what `make run`'s demo namespace answers.

    tests/browser runs the first one through the page. (Imported here, not at module level: the demo
    module pulls in the whole Memory stack, which `python -m api.graphiql` at install time does not need.)
    """
    from palimpsest.api.demo import DEMO_NAMESPACE as ns

    return [
        f"""# Recall from "{ns}", the namespace make run loads:
# press the run button (or Ctrl-Enter). The Docs
# and the Explorer (left) list every field.
query Recall {{
  recall(query: "where does the payments API keep its data?", namespace: "{ns}", k: 3) {{
    storeRevision
    fingerprint
    items {{ rank content source score }}
    hidden {{ superseded }}
    completeness {{ itemsTruncated }}
  }}
}}
""",
        f"""# Every version of one claim key and what
# happened to each, oldest first.
query History {{
  history(claimKey: "deploy.window", namespace: "{ns}") {{
    claim {{ content status revision }}
    events {{ kind revision }}
  }}
}}
""",
        f"""# What the store believed at revision 1,
# before the deploy freeze was recorded.
query AsOfRevision {{
  recall(query: "can we deploy to production?", namespace: "{ns}", k: 1, asOfRevision: 1) {{
    storeRevision
    items {{ content }}
  }}
}}
""",
    ]


def cache_dir() -> Path:
    """PALIMPSEST_CACHE_DIR, read now (palimpsest.settings)."""
    return Settings.from_env().cache_dir


def assets_dir(base: Path | None = None) -> Path:
    """Where this set of pinned versions lives; a new pin gets a new directory, never a mixed one."""
    tag = "-".join(f"{p.name.rsplit('/', 1)[-1]}-{p.version}" for p in PACKAGES)
    return (base or cache_dir()) / "graphiql" / tag


def installed(directory: Path) -> bool:
    """True when every file is there (checked when written; the page's `integrity` checks them on use)."""
    return (directory / ".complete").exists() and all((directory / name).is_file() for name in FILES)


class AssetError(RuntimeError):
    """The assets could not be fetched or did not match their pins; the message says what to do."""


def _sri(data: bytes) -> str:
    return "sha384-" + base64.b64encode(hashlib.sha384(data).digest()).decode()


def _npm_integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def install(directory: Path | None = None) -> Path:
    """Fetch the pinned packages with `npm pack`, check them, keep only the served files; idempotent."""
    target = directory or assets_dir()
    if installed(target):
        return target
    npm = shutil.which("npm")
    if npm is None:
        raise AssetError("'npm' was not found on PATH: install Node.js's npm (Debian: apt-get install npm) "
                         "to fetch GraphiQL's pinned files from the npm registry")
    with file_lock(target.parent / ".install.lock"):
        if installed(target):
            return target
        with tempfile.TemporaryDirectory(prefix="palimpsest-graphiql-") as tmp:
            proc = subprocess.run([npm, "pack", "--json", "--pack-destination", tmp, *(p.spec for p in PACKAGES)],
                                  cwd=tmp, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise AssetError(f"npm pack failed for {', '.join(p.spec for p in PACKAGES)}:\n"
                                 f"{(proc.stdout + proc.stderr)[-2000:]}")
            packed = {entry["name"]: Path(tmp) / entry["filename"] for entry in json.loads(proc.stdout)}
            staging = Path(tmp) / "files"
            staging.mkdir()
            for package in PACKAGES:
                _extract(package, packed.get(package.name), staging)
            (staging / ".complete").write_text("".join(f"{p.spec} {p.integrity}\n" for p in PACKAGES))
            partial = target.with_name(target.name + ".partial")
            shutil.rmtree(partial, ignore_errors=True)
            shutil.copytree(staging, partial)
            shutil.rmtree(target, ignore_errors=True)
            partial.rename(target)
    return target


def _extract(package: NpmPackage, tarball: Path | None, into: Path) -> None:
    if tarball is None or not tarball.is_file():
        raise AssetError(f"npm pack did not produce {package.spec}")
    data = tarball.read_bytes()
    if _npm_integrity(data) != package.integrity:
        raise AssetError(f"{package.spec}: the tarball does not match its pinned sha512 "
                         f"(got {_npm_integrity(data)[:30]}…)")
    with tarfile.open(tarball, "r:gz") as tar:
        for asset in package.files:
            try:
                member = tar.extractfile(f"package/{asset.path}")
            except KeyError:
                member = None
            if member is None:
                raise AssetError(f"{package.spec} has no file {asset.path}")
            content = member.read()
            if _sri(content) != asset.sri:
                raise AssetError(f"{package.spec}/{asset.path} does not match its pinned sha384")
            (into / asset.name).write_bytes(content)


def missing_page() -> str:
    """What /graphql shows when the files were never installed: the fix, not a spinner."""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Palimpsest GraphQL: GraphiQL is not installed</title></head>
<body style="font-family: sans-serif; max-width: 46rem; margin: 3rem auto; line-height: 1.5">
<h1>GraphiQL is not installed</h1>
<p>The GraphQL endpoint works (POST queries to this URL), but GraphiQL's files are not on this machine.
They are fetched once, from the npm registry, into the cache directory. Run:</p>
<pre id="install-hint" style="background: #f3f3f3; padding: 1rem">{html.escape(INSTALL_HINT)}</pre>
<p>then reload this page.</p>
</body></html>
"""


def page(graphql_path: str = "/graphql") -> str:
    """The GraphiQL page: pinned local files with their integrity, the demo queries as the first tabs."""

    def tag(name: str) -> str:
        src, sri = f"{ASSET_PREFIX}/{name}", FILES[name].sri
        if name.endswith(".css"):
            return f'<link rel="stylesheet" href="{src}" integrity="{sri}" onerror="assetFailed(this)">'
        return f'<script src="{src}" integrity="{sri}" onerror="assetFailed(this)"></script>'

    tabs = json.dumps([{"query": q} for q in example_queries()]).replace("</", "<\\/")
    hint = json.dumps(INSTALL_HINT)
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Palimpsest GraphQL</title>
<style>
  body {{ height: 100%; margin: 0; width: 100%; overflow: hidden; }}
  #graphiql {{ height: 100vh; display: flex; }}
  #graphiql-failed {{ font-family: sans-serif; max-width: 46rem; margin: 3rem auto; line-height: 1.5; }}
  .graphiql-explorer-actions select {{ margin-left: 4px; }}
</style>
<script>
  // Any pinned file that does not load (not installed, or changed on disk) ends in this message.
  function assetFailed(element) {{
    var root = document.getElementById("graphiql");
    var name = (element && (element.src || element.href)) || "a GraphiQL file";
    root.outerHTML = '<div id="graphiql-failed"><h1>GraphiQL could not load</h1><p>' +
      String(name).replace(/[<>&]/g, "") + ' did not load. Install GraphiQL\\'s files, then reload:</p>' +
      '<pre id="install-hint">' + {hint} + '</pre></div>';
  }}
</script>
{tag("graphiql.min.css")}
{tag("plugin-explorer.css")}
</head>
<body>
<div id="graphiql">Loading...</div>
{tag("react.production.min.js")}
{tag("react-dom.production.min.js")}
{tag("graphiql.min.js")}
{tag("plugin-explorer.umd.js")}
<script>
  (function () {{
    if (typeof React === "undefined" || typeof ReactDOM === "undefined" || typeof GraphiQL === "undefined" ||
        typeof GraphiQLPluginExplorer === "undefined") {{
      if (document.getElementById("graphiql")) assetFailed(null);
      return;
    }}
    var url = new URL({json.dumps(graphql_path)}, window.location.href);
    var ws = new URL(url.href);
    ws.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    var fetcher = GraphiQL.createFetcher({{ url: url.href, subscriptionUrl: ws.href }});
    var explorer = GraphiQLPluginExplorer.explorerPlugin();
    var root = ReactDOM.createRoot(document.getElementById("graphiql"));
    root.render(React.createElement(GraphiQL, {{
      fetcher: fetcher,
      plugins: [explorer],
      defaultTabs: {tabs},
      defaultEditorToolsVisibility: true,
      isHeadersEditorEnabled: true,
      shouldPersistHeaders: false,
      inputValueDeprecation: true
    }}));
  }})();
</script>
</body>
</html>
"""


def main() -> int:
    """`python -m api.graphiql`: install the files (what `palimpsest graphiql-assets` does)."""
    try:
        print(install())
    except AssetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
