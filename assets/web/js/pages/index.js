// The pages by address, and the navigation each role sees.

import {lanesPage} from './lanes.js';
import {bookingsPage} from './bookings.js';
import {keysPage} from './keys.js';
import {usagePage} from './usage.js';
import {catalogPage} from './catalog.js';
import {storagePage} from './storage.js';
import {profilePage} from './profile.js';
import {statsPage} from './stats.js';
import {peoplePage} from './people.js';
import {adminKeysPage} from './admin_keys.js';
import {requestsPage} from './requests.js';
import {logPage} from './log.js';
import {runtimePage} from './runtime.js';
import {adminStoragePage} from './admin_storage.js';
import {settingsPage} from './settings.js';
import {backupsPage} from './backups.js';
import {auditPage} from './audit.js';

export const pages = {
  '/lanes': {title: 'Lanes', render: lanesPage},
  '/bookings': {title: 'Bookings', render: bookingsPage},
  '/catalog': {title: 'Catalog', render: catalogPage},
  '/usage': {title: 'Usage', render: usagePage},
  '/keys': {title: 'My keys', render: keysPage},
  '/storage': {title: 'Storage', render: storagePage},
  '/profile': {title: 'Profile', render: profilePage},
  '/admin/stats': {title: 'Dashboard', render: statsPage, admin: true},
  '/admin/people': {title: 'People', render: peoplePage, admin: true},
  '/admin/keys': {title: 'All keys', render: adminKeysPage, admin: true},
  '/admin/requests': {title: 'Request log', render: requestsPage, admin: true},
  '/admin/log': {title: 'Live log', render: logPage, admin: true},
  '/admin/runtime': {title: 'Runtime', render: runtimePage, admin: true},
  '/admin/storage': {title: 'Storage admin', render: adminStoragePage, admin: true},
  '/admin/settings': {title: 'Settings', render: settingsPage, admin: true},
  '/admin/backups': {title: 'Backups', render: backupsPage, admin: true},
  '/admin/audit': {title: 'Audit', render: auditPage, admin: true},
};

export function navigation(admin) {
  const groups = [{title: 'Team', items: [
    ['/lanes', 'Lanes'], ['/bookings', 'Bookings'], ['/catalog', 'Catalog'], ['/usage', 'Usage'],
    ['/keys', 'My keys'], ['/storage', 'Storage'], ['/profile', 'Profile']]}];
  if (admin) groups.push({title: 'Admin', items: [
    ['/admin/stats', 'Dashboard'], ['/admin/people', 'People'], ['/admin/keys', 'All keys'],
    ['/admin/requests', 'Request log'], ['/admin/log', 'Live log'], ['/admin/runtime', 'Runtime'],
    ['/admin/storage', 'Storage admin'], ['/admin/settings', 'Settings'], ['/admin/backups', 'Backups'],
    ['/admin/audit', 'Audit']]});
  return groups;
}
