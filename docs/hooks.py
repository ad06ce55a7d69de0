"""MkDocs hooks (mkdocs.yml ``hooks``): 404.html's links relative, so that they work opened from disk.

MkDocs writes the 404 page's links from the site's root (``/sql.html``), for a server that answers any missing path with it;
opened from disk, where this site is read (mkdocs.yml: ``use_directory_urls``), ``/`` is the file system's root and every one
is broken. The page lies at the site's root, so the same links without their ``/`` work from disk, and from ``make docs-serve``
for a missing page at the root.
"""

import re

ROOTED = re.compile(r'(\s(?:href|src))="/(?!/)')


def on_post_template(output_content: str, template_name: str, config: object) -> str:
    return ROOTED.sub(r'\1="', output_content) if template_name == "404.html" else output_content
