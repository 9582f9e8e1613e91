// The operators' lists at 100k rows a table over 20k users are index-served: every SELECT a page of the admin API sends
// is explained as sent (see test/helpers/plan-guard.ts) and must not read all of a large table, sort more than a page,
// go parallel or expect more rows than a page, unfiltered or with each filter. The signed-in operator made 2,000 of the
// audit entries and playground runs; a customer has 50 payments and top-up orders and made 2,000 reports. PostgreSQL
// only (CI's PostgreSQL pass); PGlite holds no table of this size.
import { afterAll, beforeAll, describe, it } from 'vitest';
import { member, type Member } from '../helpers/community.js';
import { AUDIT_TARGET_SQL, seedAuditLog, seedPaymentsAndOrders, seedPlayground, seedReports, seedUsers, type ListsScale } from '../helpers/lists-scale.js';
import { testDatabaseUrl } from '../helpers/pg-admin.js';
import { openPlanGuard, type PlanGuard } from '../helpers/plan-guard.js';
import { bearer, createTestApp, signUpAs, type TestApp } from '../helpers/test-app.js';

const LARGE_TABLES = new Set(['users', 'admin_audit_log', 'payments', 'topup_orders', 'community_reports', 'playground_runs', 'playground_conversations']);

describe.runIf(testDatabaseUrl())("the operators' lists at 100k rows a table are index-served (PostgreSQL)", () => {
  let t: TestApp;
  let admin: { id: string; headers: Record<string, string> };
  let customer: Member;
  let guard: PlanGuard;
  let auditTarget: string;

  beforeAll(async () => {
    t = await createTestApp();
    const operator = await signUpAs(t, 'ADMIN');
    admin = { id: operator.user.id as string, headers: bearer(operator.accessToken) };
    customer = await member(t, 'Customer');
    const db = t.platform.database;
    const forAdmin: ListsScale = { users: 20_000, rows: 100_000, ownerId: admin.id };
    const forCustomer: ListsScale = { ...forAdmin, ownerId: customer.id };
    await seedUsers(db, forAdmin);
    await seedPaymentsAndOrders(db, forCustomer);
    await seedAuditLog(db, forAdmin);
    await seedReports(db, forCustomer);
    await seedPlayground(db, forAdmin);
    await db.query('analyze');
    auditTarget = (await db.query<{ id: string }>(`select ${AUDIT_TARGET_SQL} as id`)).rows[0]!.id;
    guard = await openPlanGuard(t, LARGE_TABLES);
  }, 180_000);

  afterAll(async () => {
    await guard?.close();
    await t?.close();
  });

  /** One test per list and filter, so a report names every one that fails. */
  const cases: Array<[string, () => string]> = [
    ['users: every account, newest first', () => '/v1/admin/users'],
    ['users: a search by email, name or handle', () => '/v1/admin/users?q=rahman'],
    ['users: by role', () => '/v1/admin/users?role=ADMIN'],
    ['users: by status', () => '/v1/admin/users?status=SUSPENDED'],
    ['audit trail: every entry', () => '/v1/admin/audit'],
    ['audit trail: by action', () => '/v1/admin/audit?action=user.suspend'],
    ['audit trail: by target', () => `/v1/admin/audit?targetType=user&targetId=${auditTarget}`],
    ['audit trail: by operator', () => `/v1/admin/audit?actorId=${admin.id}`],
    ['payments: every payment', () => '/v1/admin/payments'],
    ['payments: by status', () => '/v1/admin/payments?status=SUCCEEDED'],
    ['payments: by channel', () => '/v1/admin/payments?channel=dcb'],
    ["payments: a customer's", () => `/v1/admin/payments?userId=${customer.id}`],
    ['top-up orders: every order', () => '/v1/admin/topup/orders'],
    ["top-up orders: by status (its payment's)", () => '/v1/admin/topup/orders?status=SUCCEEDED'],
    ["top-up orders: a customer's", () => `/v1/admin/topup/orders?userId=${customer.id}`],
    ['moderation queue: every report', () => '/v1/admin/reports'],
    ['moderation queue: by status', () => '/v1/admin/reports?status=OPEN'],
    ['moderation queue: by target type', () => '/v1/admin/reports?targetType=POST'],
    ['moderation queue: by status and target type', () => '/v1/admin/reports?status=OPEN&targetType=USER'],
    ['playground: the history of every run', () => '/v1/admin/playground/history'],
    ['playground: runs by operator', () => `/v1/admin/playground/history?adminId=${admin.id}`],
    ['playground: runs by kind', () => '/v1/admin/playground/history?kind=IMAGE'],
    ["playground: the operator's saved conversations", () => '/v1/admin/playground/conversations'],
  ];
  it.each(cases)('%s', (_, url) => guard.expectIndexServed(url(), admin.headers));
});
