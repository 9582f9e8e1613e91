import { readFileSync } from 'node:fs';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

interface ForwardReference {
  name: string;
  /** 1-based lines of the use and of the declaration it comes before. */
  usedAt: number;
  declaredAt: number;
}

/**
 * Uses, in the body of `functionName`, of a name the body declares at its top level (const, let, function, class)
 * before that declaration is complete. Outside a closure such a use is already a compile error; inside one (a callback
 * handed to a factory) it compiles and hides a construction cycle, which is what this finds. Names resolve through
 * the type checker, so a parameter or a property that happens to share a service's name is not taken for it.
 */
function forwardReferences(source: string, functionName = 'createServices'): ForwardReference[] {
  const fileName = 'composition-root.ts';
  const sourceFile = ts.createSourceFile(fileName, source, ts.ScriptTarget.ES2022, true);
  const host = ts.createCompilerHost({});
  host.getSourceFile = (name) => (name === fileName ? sourceFile : undefined);
  // The file alone: imports stay unresolved, which does not matter for the names declared in the body.
  const program = ts.createProgram([fileName], { noResolve: true, noLib: true, types: [] }, host);
  const checker = program.getTypeChecker();

  const root = sourceFile.statements.find((s): s is ts.FunctionDeclaration => ts.isFunctionDeclaration(s) && s.name?.text === functionName);
  if (!root?.body) throw new Error(`No function ${functionName} in the source.`);

  const declarationEnd = new Map<ts.Symbol, number>();
  const declarationNames = new Set<ts.Node>();
  const declare = (name: ts.Node, end: number) => {
    if (ts.isIdentifier(name)) {
      const symbol = checker.getSymbolAtLocation(name);
      if (symbol) declarationEnd.set(symbol, end);
      declarationNames.add(name);
    } else if (ts.isObjectBindingPattern(name) || ts.isArrayBindingPattern(name)) {
      for (const element of name.elements) if (ts.isBindingElement(element)) declare(element.name, end);
    }
  };
  for (const statement of root.body.statements) {
    if (ts.isVariableStatement(statement)) for (const d of statement.declarationList.declarations) declare(d.name, statement.getEnd());
    else if ((ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement)) && statement.name) declare(statement.name, statement.getEnd());
  }

  const line = (position: number) => sourceFile.getLineAndCharacterOfPosition(position).line + 1;
  const found: ForwardReference[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isIdentifier(node) && !declarationNames.has(node)) {
      const symbol = ts.isShorthandPropertyAssignment(node.parent) ? checker.getShorthandAssignmentValueSymbol(node.parent) : checker.getSymbolAtLocation(node);
      const end = symbol && declarationEnd.get(symbol);
      if (end !== undefined && node.getStart() < end) {
        found.push({ name: node.text, usedAt: line(node.getStart()), declaredAt: line(symbol!.valueDeclaration?.getStart() ?? end) });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(root.body);
  return found;
}

const servicesSource = readFileSync(new URL('./services.ts', import.meta.url), 'utf8');

describe('the composition root (src/services.ts)', () => {
  it('builds every service before anything uses it: no closure refers to a service built further down', () => {
    expect(forwardReferences(servicesSource)).toEqual([]);
  });

  it('would be refused with a closure handed to a factory that uses a service built further down', () => {
    // The same file with a closure at the top of createServices that uses the last service it builds.
    const body = servicesSource.indexOf('{', servicesSource.indexOf('export function createServices(')) + 1;
    const bodyText = servicesSource.slice(body, servicesSource.indexOf('\n}\n', body));
    const lastService = [...bodyText.matchAll(/^ {2}const (\w+) = /gm)].at(-1)![1]!;
    const reintroduced = `${servicesSource.slice(0, body)}\n  const probe = () => ${lastService};${servicesSource.slice(body)}`;
    expect(forwardReferences(reintroduced)).toContainEqual(
      expect.objectContaining({ name: lastService, usedAt: servicesSource.slice(0, body).split('\n').length + 1 }),
    );
  });

  it('tells a forward reference from a parameter, a property or a later use of the same name', () => {
    const source = `
      function createServices(platform) {
        const plans = createPlans({ liveChannels: async () => payments.liveChannelSlugs() });
        const wallet = createWallet({ onSwept: (tx, swept) => helper(tx, swept), hints: () => ({ topup }) });
        const files = createFiles({ gateway: (gateway) => gateway.id, wallet: wallet.id });
        const payments = createPayments({ plans, files: { payments: 1 } });
        const topup = createTopUp({ payments });
        function helper(tx, swept) {
          return payments.record(tx, swept);
        }
        return { plans, wallet, files, payments, topup };
      }`;
    expect(forwardReferences(source)).toEqual([
      { name: 'payments', usedAt: 3, declaredAt: 6 },
      { name: 'helper', usedAt: 4, declaredAt: 8 },
      { name: 'topup', usedAt: 4, declaredAt: 7 },
    ]);
  });
});
