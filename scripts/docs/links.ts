import { existsSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { anchorsOf, docFiles, linksOf, REPO_ROOT, readDoc } from './markdown.ts';

/**
 * Every relative link and anchor of README.md and docs/ must resolve: the file exists (inside the repository)
 * and the anchor is a heading of it that GitHub and the docs site both slug the same way. Absolute paths
 * (`/docs`) are refused: on GitHub they leave the repository and on the site they leave the docs. External
 * URLs are not fetched. Answers one line per problem, `file:line: what`.
 */
export function checkLinks(root = REPO_ROOT): string[] {
  const problems: string[] = [];
  const anchorCache = new Map<string, Set<string>>();
  const anchors = (file: string) => {
    let set = anchorCache.get(file);
    if (!set) {
      set = anchorsOf(readDoc(file, root));
      anchorCache.set(file, set);
    }
    return set;
  };
  for (const file of docFiles(root)) {
    for (const { target, line } of linksOf(readDoc(file, root))) {
      const where = `${file}:${line}`;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue; // https:, mailto: ...
      if (target.startsWith('/')) {
        problems.push(`${where}: absolute link ${target} (write it as a relative link, or as a full URL in code)`);
        continue;
      }
      const [pathPart = '', anchor] = target.split('#', 2);
      const path = decodeURIComponent(pathPart);
      const resolved = path ? normalize(join(dirname(file), path)) : file;
      if (resolved.startsWith('..')) {
        problems.push(`${where}: ${target} leaves the repository`);
        continue;
      }
      const full = join(root, resolved);
      if (!existsSync(full)) {
        problems.push(`${where}: ${target}: no such file ${resolved}`);
        continue;
      }
      if (anchor === undefined || anchor === '') continue;
      const isMarkdown = statSync(full).isFile() && resolved.endsWith('.md');
      if (!isMarkdown) {
        problems.push(`${where}: ${target}: an anchor into a file that is not Markdown`);
      } else if (!anchors(resolved).has(anchor)) {
        problems.push(`${where}: ${target}: no heading of ${resolved} has the anchor #${anchor}`);
      }
    }
  }
  return problems;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const problems = checkLinks();
  for (const p of problems) console.error(p);
  if (problems.length) process.exit(1);
  console.log('links: ok');
}
