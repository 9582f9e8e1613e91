/** The kind of purchase as the API names it (a subscription payment is a "plan"). */
export const publicKind = (purposeKind: string) => (purposeKind === 'subscription' ? 'plan' : purposeKind);

/** Minor units as customers read them, e.g. "12.50 USD". */
export const money = (minor: number, currency: string) => `${(minor / 100).toFixed(2)} ${currency}`;
