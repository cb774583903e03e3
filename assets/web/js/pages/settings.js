// The team's policy: whether bookings need approval, booking limits, the default QoS class.

import {h, field, select} from '../dom.js';
import * as api from '../api.js';
import {section, form, notice, load} from '../ui.js';

export function settingsPage({el}) {
  const box = h('div', {id: 'settings'});
  load(box, () => api.get('/api/admin/settings'), st => {
    const f = form([
      h('label', {class: 'check'}, h('input', {type: 'checkbox', name: 'approval_required', id: 'approval-required', checked: !!st.approval_required}), ' bookings need an admin\'s approval'),
      field('Longest booking (hours)', h('input', {name: 'max_booking_hours', type: 'number', min: '0', step: '1', value: st.max_booking_hours ?? 0}), '0: no limit'),
      field('Hours per person per week', h('input', {name: 'hours_per_week', type: 'number', min: '0', step: '1', value: st.hours_per_week ?? 0}), '0: no limit'),
      field('Default QoS class', select('default_qos', [['', '(the server\'s default)'], ['interactive', 'interactive'], ['completion', 'completion'], ['agent', 'agent'], ['background', 'background']], st.default_qos || '')),
    ], 'Save', async v => {
      await api.put('/api/admin/settings', {
        approval_required: v.approval_required,
        max_booking_hours: Number(v.max_booking_hours) || 0,
        hours_per_week: Number(v.hours_per_week) || 0,
        default_qos: v.default_qos,
      });
      notice('Settings saved.');
    });
    f.id = 'settings-form';
    return f;
  });
  el.append(section('Policy', box));
}
